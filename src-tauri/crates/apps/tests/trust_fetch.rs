//! The store client's trust fetches (signing key, revocation list) against a loopback server that
//! misbehaves the ways a hostile or broken store can: it stalls, drips its answer one byte at a
//! time, or sends far more than a key or a list can be. Each fetch must end with a clear refusal
//! within its total timeout, and never hold more than its cap.

use std::time::Duration;

use osprey_apps::store_client::{MAX_REVOCATIONS_BYTES, MAX_SIGNING_KEY_BYTES, StoreClient};
use osprey_apps::trust::TrustSource;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Clone, Copy)]
enum Behaviour {
    /// Accepts and never answers.
    Stall,
    /// Sends the headers, then the body one byte every 50 ms.
    Drip,
    /// Declares and sends `len` bytes of a JSON array.
    Send { len: usize, declare_length: bool },
}

/// Serves every connection with `behaviour`; returns the store's base URL.
async fn store(behaviour: Behaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                match behaviour {
                    Behaviour::Stall => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    Behaviour::Drip => {
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n")
                            .await;
                        for _ in 0..1000 {
                            if stream.write_all(b" ").await.is_err() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                    Behaviour::Send {
                        len,
                        declare_length,
                    } => {
                        let header = if declare_length {
                            format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\n\r\n")
                        } else {
                            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_string()
                        };
                        let _ = stream.write_all(header.as_bytes()).await;
                        let mut body = vec![b' '; len];
                        body[0] = b'[';
                        body[len - 1] = b']';
                        if declare_length {
                            let _ = stream.write_all(&body).await;
                        } else {
                            for piece in body.chunks(64 * 1024) {
                                let chunk = format!("{:x}\r\n", piece.len());
                                if stream.write_all(chunk.as_bytes()).await.is_err()
                                    || stream.write_all(piece).await.is_err()
                                    || stream.write_all(b"\r\n").await.is_err()
                                {
                                    return;
                                }
                            }
                            let _ = stream.write_all(b"0\r\n\r\n").await;
                        }
                    }
                }
            });
        }
    });
    format!("http://{address}")
}

fn client(url: String) -> StoreClient {
    StoreClient::new(url).with_trust_timeout(Duration::from_millis(400))
}

#[tokio::test]
async fn a_store_that_stalls_or_drips_is_given_up_on_at_the_total_timeout() {
    for behaviour in [Behaviour::Stall, Behaviour::Drip] {
        let store = client(store(behaviour).await);
        let error = store.signing_key().await.unwrap_err();
        assert_eq!(error.code(), "store_unavailable");
        assert!(
            error
                .to_string()
                .contains("did not send signing key within 0.4 s"),
            "{error}"
        );
        let error = store.revocations().await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("did not send revocation list within"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn answers_larger_than_a_key_or_a_list_are_refused_declared_or_not() {
    for declare_length in [true, false] {
        let key = client(
            store(Behaviour::Send {
                len: MAX_SIGNING_KEY_BYTES + 1,
                declare_length,
            })
            .await,
        );
        let error = key.signing_key().await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("signing key is larger than 64 KB"),
            "{error}"
        );

        let list = StoreClient::new(
            store(Behaviour::Send {
                len: MAX_REVOCATIONS_BYTES + 1,
                declare_length,
            })
            .await,
        );
        let error = list.revocations().await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("revocation list is larger than 1024 KB"),
            "{error}"
        );
    }
    // Just under the cap is accepted: the cap refuses size, not lists.
    let list = StoreClient::new(
        store(Behaviour::Send {
            len: MAX_REVOCATIONS_BYTES,
            declare_length: false,
        })
        .await,
    );
    assert!(list.revocations().await.unwrap().is_empty());
}
