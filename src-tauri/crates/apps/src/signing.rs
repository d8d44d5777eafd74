//! Package signing: `signatures.json` holds the signer's key id, the algorithm (`ed25519`), the
//! binary's SHA-256, a signature over the binary and a signature over the exact bytes of
//! `manifest.json`. Verification uses strict ed25519 (`verify_strict`: canonical S, no small-order
//! keys or points) and refuses every mismatch with `signature_invalid` and a stable reason.
//!
//! The binary signature is over `osprey-napp-binary-v1:` followed by the binary's SHA-256 digest,
//! so a 500 MB binary is hashed as a stream rather than held in memory, and a binary signature
//! can never be mistaken for a manifest one (a manifest is JSON and starts with `{`).
//!
//! The whole package is signed too: `files` lists the SHA-256 of every file in the package but
//! signatures.json (manifest, binary, SKILL.md, ui/...), and `files_signature` is over
//! `osprey-napp-files-v1:` followed by one `path NUL hex LF` line per file in path order. A
//! package whose files differ from that list in any way (a swapped SKILL.md is prompt injection
//! with the signer's name on it; an extra ui/ script) is refused, naming the file.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result};

pub const ALGORITHM: &str = "ed25519";
const BINARY_CONTEXT: &[u8] = b"osprey-napp-binary-v1:";
const FILES_CONTEXT: &[u8] = b"osprey-napp-files-v1:";
/// A skill archive's signature is over this followed by the archive's 32-byte SHA-256.
const ARCHIVE_CONTEXT: &[u8] = b"osprey-skill-archive-v1:";
/// The one file the signed list cannot include.
const SIGNATURES_FILE: &str = "signatures.json";
/// The group order L, little-endian: a signature's S must be below it.
const GROUP_ORDER: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// The contents of `signatures.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signatures {
    pub key_id: String,
    pub algorithm: String,
    /// Lowercase hex.
    pub binary_sha256: String,
    /// Base64 (standard alphabet, padded) of the 64-byte signature.
    pub binary_signature: String,
    pub manifest_signature: String,
    /// Every file of the package but signatures.json, by its `/`-separated path: SHA-256 hex.
    /// Missing in packages signed before whole-package signatures; such a package is refused.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub files_signature: String,
}

impl Signatures {
    pub fn parse(bytes: &[u8]) -> Result<Signatures> {
        serde_json::from_slice(bytes).map_err(|e| Error::SignatureInvalid {
            reason: SignatureFailure::Malformed(e.to_string()),
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// A detached signature over a whole archive (a store skill's `.tar.gz`): ed25519 over
/// `osprey-skill-archive-v1:` followed by the archive's SHA-256, by the key `key_id` names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveSignature {
    pub key_id: String,
    pub algorithm: String,
    /// The archive's SHA-256, lowercase hex.
    pub sha256: String,
    /// Base64 (standard alphabet, padded) of the 64-byte signature.
    pub signature: String,
}

/// Why verification refused a package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureFailure {
    /// `signatures.json` is not the expected JSON object.
    Malformed(String),
    UnsupportedAlgorithm(String),
    /// Signed by a key other than the trusted one.
    KeyIdMismatch {
        expected: String,
        found: String,
    },
    /// A signature that is not 64 bytes of valid base64 (truncated, padded wrongly, ...).
    Encoding {
        field: &'static str,
    },
    /// A signature whose S is not reduced modulo the group order.
    NonCanonical {
        field: &'static str,
    },
    ManifestSignature,
    BinaryHash,
    BinarySignature,
    /// Signed before whole-package signatures: its files are not covered.
    FilesUnsigned,
    FilesSignature,
    /// A file whose contents differ from the signed hash.
    FileHash(String),
    /// A file in the package that the signature does not list.
    FileUnlisted(String),
    /// A signed file that is not in the package.
    FileMissing(String),
    /// A signed archive whose bytes hash to something else than the signed SHA-256.
    ArchiveHash,
    /// The signature over the archive's SHA-256 does not verify.
    ArchiveSignature,
}

impl SignatureFailure {
    pub fn code(&self) -> &'static str {
        match self {
            SignatureFailure::Malformed(_) => "signatures_malformed",
            SignatureFailure::UnsupportedAlgorithm(_) => "unsupported_algorithm",
            SignatureFailure::KeyIdMismatch { .. } => "key_id_mismatch",
            SignatureFailure::Encoding { .. } => "signature_encoding",
            SignatureFailure::NonCanonical { .. } => "signature_non_canonical",
            SignatureFailure::ManifestSignature => "manifest_signature_mismatch",
            SignatureFailure::BinaryHash => "binary_hash_mismatch",
            SignatureFailure::BinarySignature => "binary_signature_mismatch",
            SignatureFailure::FilesUnsigned => "files_unsigned",
            SignatureFailure::FilesSignature => "files_signature_mismatch",
            SignatureFailure::FileHash(_) => "file_hash_mismatch",
            SignatureFailure::FileUnlisted(_) => "file_unlisted",
            SignatureFailure::FileMissing(_) => "file_missing",
            SignatureFailure::ArchiveHash => "archive_hash_mismatch",
            SignatureFailure::ArchiveSignature => "archive_signature_mismatch",
        }
    }
}

impl fmt::Display for SignatureFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureFailure::Malformed(why) => write!(f, "signatures.json is malformed: {why}"),
            SignatureFailure::UnsupportedAlgorithm(name) => {
                write!(
                    f,
                    "algorithm `{name}` is not supported (expected `{ALGORITHM}`)"
                )
            }
            SignatureFailure::KeyIdMismatch { expected, found } => {
                write!(
                    f,
                    "signed by key `{found}`, but the trusted key is `{expected}`"
                )
            }
            SignatureFailure::Encoding { field } => {
                write!(f, "`{field}` is not a base64-encoded 64-byte signature")
            }
            SignatureFailure::NonCanonical { field } => {
                write!(f, "`{field}` is not in canonical form")
            }
            SignatureFailure::ManifestSignature => {
                f.write_str("the manifest signature does not match manifest.json")
            }
            SignatureFailure::BinaryHash => {
                f.write_str("the binary's SHA-256 does not match binary_sha256")
            }
            SignatureFailure::BinarySignature => {
                f.write_str("the binary signature does not match the binary")
            }
            SignatureFailure::FilesUnsigned => f.write_str(
                "the signature does not cover the package's files (signed by an older tool): \
                 sign it again",
            ),
            SignatureFailure::FilesSignature => {
                f.write_str("the signature over the package's file list does not match")
            }
            SignatureFailure::FileHash(path) => {
                write!(f, "`{path}` was changed after the package was signed")
            }
            SignatureFailure::FileUnlisted(path) => {
                write!(f, "`{path}` was added after the package was signed")
            }
            SignatureFailure::FileMissing(path) => {
                write!(f, "`{path}` was removed after the package was signed")
            }
            SignatureFailure::ArchiveHash => {
                f.write_str("the archive is not the one that was signed (its SHA-256 differs)")
            }
            SignatureFailure::ArchiveSignature => {
                f.write_str("the signature over the archive does not match")
            }
        }
    }
}

fn failure(reason: SignatureFailure) -> Error {
    Error::SignatureInvalid { reason }
}

/// A publisher's (or the store's) signing key.
pub struct KeyPair {
    signing: SigningKey,
}

impl fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyPair")
            .field("key_id", &self.public().key_id())
            .finish_non_exhaustive()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretKeyFile {
    algorithm: String,
    key_id: String,
    secret_key: String,
    public_key: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PublicKeyFile {
    algorithm: String,
    key_id: String,
    public_key: String,
}

impl KeyPair {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<KeyPair> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| Error::KeyInvalid(format!("no randomness for a key: {e}")))?;
        Ok(KeyPair {
            signing: SigningKey::from_bytes(&seed),
        })
    }

    pub fn from_seed(seed: [u8; 32]) -> KeyPair {
        KeyPair {
            signing: SigningKey::from_bytes(&seed),
        }
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: self.signing.verifying_key(),
        }
    }

    /// The secret key file (JSON). Keep it private: whoever has it can sign as this publisher.
    pub fn to_secret_json(&self) -> String {
        let public = self.public();
        let file = SecretKeyFile {
            algorithm: ALGORITHM.into(),
            key_id: public.key_id(),
            secret_key: STANDARD.encode(self.signing.to_bytes()),
            public_key: STANDARD.encode(public.key.to_bytes()),
        };
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }

    pub fn from_secret_json(text: &str) -> Result<KeyPair> {
        let file: SecretKeyFile = serde_json::from_str(text)
            .map_err(|e| Error::KeyInvalid(format!("not a secret key file: {e}")))?;
        if file.algorithm != ALGORITHM {
            return Err(Error::KeyInvalid(format!("algorithm `{}`", file.algorithm)));
        }
        let seed: [u8; 32] = decode_exact(&file.secret_key)
            .ok_or_else(|| Error::KeyInvalid("secret_key is not 32 bytes of base64".into()))?;
        let pair = KeyPair::from_seed(seed);
        let public = pair.public();
        if STANDARD.encode(public.key.to_bytes()) != file.public_key
            || public.key_id() != file.key_id
        {
            return Err(Error::KeyInvalid(
                "public_key or key_id does not belong to secret_key".into(),
            ));
        }
        Ok(pair)
    }

    /// Signs the unpacked package in `package`: its manifest bytes, its binary and every file.
    pub fn sign(&self, package: &Path, manifest: &[u8], binary: &Path) -> Result<Signatures> {
        let files = file_hashes(package)?;
        let digest = binary_digest(binary, &files)?;
        Ok(Signatures {
            key_id: self.public().key_id(),
            algorithm: ALGORITHM.into(),
            binary_sha256: hex::encode(digest),
            binary_signature: STANDARD
                .encode(self.signing.sign(&binary_message(&digest)).to_bytes()),
            manifest_signature: STANDARD.encode(self.signing.sign(manifest).to_bytes()),
            files_signature: STANDARD.encode(self.signing.sign(&files_message(&files)).to_bytes()),
            files,
        })
    }
}

impl KeyPair {
    /// Signs a whole archive (a skill package) by its SHA-256.
    pub fn sign_archive(&self, archive: &[u8]) -> ArchiveSignature {
        let digest: [u8; 32] = Sha256::digest(archive).into();
        ArchiveSignature {
            key_id: self.public().key_id(),
            algorithm: ALGORITHM.into(),
            sha256: hex::encode(digest),
            signature: STANDARD.encode(self.signing.sign(&archive_message(&digest)).to_bytes()),
        }
    }
}

/// A key packages are verified against: the store's current key, or a publisher's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
}

impl PublicKey {
    /// Refuses weak (small-order) keys, which would let forged signatures verify.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<PublicKey> {
        let key = VerifyingKey::from_bytes(bytes)
            .map_err(|e| Error::KeyInvalid(format!("not an ed25519 public key: {e}")))?;
        if key.is_weak() {
            return Err(Error::KeyInvalid("a small-order (weak) public key".into()));
        }
        Ok(PublicKey { key })
    }

    pub fn from_base64(text: &str) -> Result<PublicKey> {
        let bytes: [u8; 32] = decode_exact(text)
            .ok_or_else(|| Error::KeyInvalid("public key is not 32 bytes of base64".into()))?;
        PublicKey::from_bytes(&bytes)
    }

    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.key.to_bytes())
    }

    /// The first 16 hex digits of the SHA-256 of the key's bytes.
    pub fn key_id(&self) -> String {
        hex::encode(&Sha256::digest(self.key.to_bytes())[..8])
    }

    pub fn to_json(&self) -> String {
        let file = PublicKeyFile {
            algorithm: ALGORITHM.into(),
            key_id: self.key_id(),
            public_key: self.to_base64(),
        };
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }

    /// Reads a public key file, or the public half of a secret key file.
    pub fn from_json(text: &str) -> Result<PublicKey> {
        let (algorithm, key_id, public_key) = match serde_json::from_str::<PublicKeyFile>(text) {
            Ok(file) => (file.algorithm, file.key_id, file.public_key),
            Err(_) => {
                let file: SecretKeyFile = serde_json::from_str(text)
                    .map_err(|e| Error::KeyInvalid(format!("not a key file: {e}")))?;
                (file.algorithm, file.key_id, file.public_key)
            }
        };
        if algorithm != ALGORITHM {
            return Err(Error::KeyInvalid(format!("algorithm `{algorithm}`")));
        }
        let key = PublicKey::from_base64(&public_key)?;
        if key.key_id() != key_id {
            return Err(Error::KeyInvalid("key_id does not match public_key".into()));
        }
        Ok(key)
    }

    /// Verifies a whole archive against its detached signature: the algorithm, the signer (this
    /// key), the archive's SHA-256 against the signed one, then the signature over it (strict
    /// ed25519). Any difference refuses it with `signature_invalid`.
    pub fn verify_archive(&self, signature: &ArchiveSignature, archive: &[u8]) -> Result<()> {
        if signature.algorithm != ALGORITHM {
            return Err(failure(SignatureFailure::UnsupportedAlgorithm(
                signature.algorithm.clone(),
            )));
        }
        let expected = self.key_id();
        if signature.key_id != expected {
            return Err(failure(SignatureFailure::KeyIdMismatch {
                expected,
                found: signature.key_id.clone(),
            }));
        }
        let decoded = decode_signature(&signature.signature, "signature")?;
        let digest: [u8; 32] = Sha256::digest(archive).into();
        if hex::encode(digest) != signature.sha256 {
            return Err(failure(SignatureFailure::ArchiveHash));
        }
        self.key
            .verify_strict(&archive_message(&digest), &decoded)
            .map_err(|_| failure(SignatureFailure::ArchiveSignature))
    }

    /// Verifies the unpacked package in `package`: `signatures` (the bytes of signatures.json)
    /// over `manifest` (the exact bytes of manifest.json), the binary file at `binary`, and every
    /// file in the package against the signed list.
    pub fn verify(
        &self,
        signatures: &[u8],
        package: &Path,
        manifest: &[u8],
        binary: &Path,
    ) -> Result<()> {
        self.verify_found(signatures, manifest, binary, &file_hashes(package)?)
    }

    /// Verifies an installed app's directory before a launch: the same checks as at install,
    /// over the package's files only. The entries the app and Osprey create there at run time
    /// (data/, logs/, tmp/, the socket, pid and status files, a quarantine mark or a staged
    /// update) are not package files; anything else that the signature does not list is refused,
    /// as is any listed file that changed or went missing since the install.
    pub fn verify_installed(&self, app_dir: &Path) -> Result<()> {
        let read = |name: &str| {
            let path = app_dir.join(name);
            std::fs::read(&path).map_err(|e| Error::io(format!("read {}", path.display()), e))
        };
        let mut found = file_hashes(app_dir)?;
        found.retain(|path, _| {
            let top = path.split('/').next().unwrap_or(path);
            !RUN_TIME_ENTRIES.contains(&top)
        });
        self.verify_found(
            &read(SIGNATURES_FILE)?,
            &read(crate::napp::MANIFEST)?,
            &crate::layout::binary_path(app_dir),
            &found,
        )
    }

    fn verify_found(
        &self,
        signatures: &[u8],
        manifest: &[u8],
        binary: &Path,
        found: &BTreeMap<String, String>,
    ) -> Result<()> {
        let signatures = Signatures::parse(signatures)?;
        if signatures.algorithm != ALGORITHM {
            return Err(failure(SignatureFailure::UnsupportedAlgorithm(
                signatures.algorithm,
            )));
        }
        let expected = self.key_id();
        if signatures.key_id != expected {
            return Err(failure(SignatureFailure::KeyIdMismatch {
                expected,
                found: signatures.key_id,
            }));
        }
        let manifest_signature =
            decode_signature(&signatures.manifest_signature, "manifest_signature")?;
        let binary_signature = decode_signature(&signatures.binary_signature, "binary_signature")?;
        self.key
            .verify_strict(manifest, &manifest_signature)
            .map_err(|_| failure(SignatureFailure::ManifestSignature))?;
        let digest = binary_digest(binary, found)?;
        if hex::encode(digest) != signatures.binary_sha256 {
            return Err(failure(SignatureFailure::BinaryHash));
        }
        self.key
            .verify_strict(&binary_message(&digest), &binary_signature)
            .map_err(|_| failure(SignatureFailure::BinarySignature))?;
        if signatures.files.is_empty() {
            return Err(failure(SignatureFailure::FilesUnsigned));
        }
        let files_signature = decode_signature(&signatures.files_signature, "files_signature")?;
        self.key
            .verify_strict(&files_message(&signatures.files), &files_signature)
            .map_err(|_| failure(SignatureFailure::FilesSignature))?;
        for (path, hash) in found {
            match signatures.files.get(path) {
                None => return Err(failure(SignatureFailure::FileUnlisted(path.clone()))),
                Some(signed) if signed != hash => {
                    return Err(failure(SignatureFailure::FileHash(path.clone())));
                }
                Some(_) => {}
            }
        }
        if let Some(path) = signatures.files.keys().find(|p| !found.contains_key(*p)) {
            return Err(failure(SignatureFailure::FileMissing(path.clone())));
        }
        Ok(())
    }
}

/// What an installed app's directory holds besides its package's files (see `crate::layout`).
const RUN_TIME_ENTRIES: [&str; 8] = [
    crate::layout::DATA_DIR,
    crate::layout::LOGS_DIR,
    crate::layout::SOCKET_FILE,
    crate::layout::PID_FILE,
    osprey_sandbox::TMP_DIR,
    osprey_sandbox::STATUS_FILE,
    crate::install::QUARANTINE_MARKER,
    crate::install::PENDING_DIR,
];

/// Every regular file under `package` but signatures.json, by `/`-separated relative path, with
/// its SHA-256 in hex. Links and other special files were refused at extraction; met here, they
/// are listed by name with an empty hash, so they never match a signature.
pub fn file_hashes(package: &Path) -> Result<BTreeMap<String, String>> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) -> Result<()> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| Error::io(format!("read {}", dir.display()), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(format!("read {}", dir.display()), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}{name}");
            let kind = entry
                .file_type()
                .map_err(|e| Error::io(format!("read {path}"), e))?;
            if kind.is_dir() {
                walk(&entry.path(), &format!("{path}/"), out)?;
            } else if kind.is_file() {
                if path != SIGNATURES_FILE {
                    out.insert(path, hex::encode(sha256_file(&entry.path())?));
                }
            } else {
                out.insert(path, String::new());
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(package, "", &mut out)?;
    Ok(out)
}

/// The binary's SHA-256, taken from the package's file list when it is there (the binary is
/// a top-level file, hashed once: it is the largest file by far), else read.
fn binary_digest(binary: &Path, files: &BTreeMap<String, String>) -> Result<[u8; 32]> {
    let listed = binary
        .file_name()
        .and_then(|name| files.get(name.to_str()?))
        .and_then(|hash| hex::decode(hash).ok()?.try_into().ok());
    match listed {
        Some(digest) => Ok(digest),
        None => sha256_file(binary),
    }
}

fn files_message(files: &BTreeMap<String, String>) -> Vec<u8> {
    let mut message = FILES_CONTEXT.to_vec();
    for (path, hash) in files {
        message.extend_from_slice(path.as_bytes());
        message.push(0);
        message.extend_from_slice(hash.as_bytes());
        message.push(b'\n');
    }
    message
}

fn decode_exact<const N: usize>(text: &str) -> Option<[u8; N]> {
    STANDARD.decode(text).ok()?.try_into().ok()
}

fn decode_signature(text: &str, field: &'static str) -> Result<Signature> {
    let bytes: [u8; 64] =
        decode_exact(text).ok_or_else(|| failure(SignatureFailure::Encoding { field }))?;
    // verify_strict refuses these too; checking first gives the refusal its own reason.
    if !scalar_is_canonical(&bytes[32..]) {
        return Err(failure(SignatureFailure::NonCanonical { field }));
    }
    Ok(Signature::from_bytes(&bytes))
}

/// S < L, comparing little-endian from the most significant byte.
fn scalar_is_canonical(s: &[u8]) -> bool {
    for (byte, order) in s.iter().rev().zip(GROUP_ORDER.iter().rev()) {
        if byte != order {
            return byte < order;
        }
    }
    false
}

fn archive_message(digest: &[u8; 32]) -> Vec<u8> {
    let mut message = ARCHIVE_CONTEXT.to_vec();
    message.extend_from_slice(digest);
    message
}

fn binary_message(digest: &[u8; 32]) -> Vec<u8> {
    let mut message = BINARY_CONTEXT.to_vec();
    message.extend_from_slice(digest);
    message
}

/// Streams a file through SHA-256.
pub fn sha256_file(path: &Path) -> Result<[u8; 32]> {
    let mut file =
        std::fs::File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_order_is_not_canonical_and_below_is() {
        assert!(!scalar_is_canonical(&GROUP_ORDER));
        let mut below = GROUP_ORDER;
        below[0] -= 1;
        assert!(scalar_is_canonical(&below));
        assert!(scalar_is_canonical(&[0u8; 32]));
        assert!(!scalar_is_canonical(&[0xFF; 32]));
    }

    #[test]
    fn an_archive_signature_verifies_only_its_archive_and_key() {
        let pair = KeyPair::generate().unwrap();
        let archive = b"a skill archive".to_vec();
        let signature = pair.sign_archive(&archive);
        pair.public().verify_archive(&signature, &archive).unwrap();
        let reason = |result: Result<()>| match result.unwrap_err() {
            Error::SignatureInvalid { reason } => reason.code(),
            other => panic!("{other}"),
        };
        assert_eq!(
            reason(pair.public().verify_archive(&signature, b"another archive")),
            "archive_hash_mismatch"
        );
        let other = KeyPair::generate().unwrap();
        assert_eq!(
            reason(other.public().verify_archive(&signature, &archive)),
            "key_id_mismatch"
        );
        // Signed by another key under this key's id: the signature itself fails.
        let mut forged = other.sign_archive(&archive);
        forged.key_id = pair.public().key_id();
        assert_eq!(
            reason(pair.public().verify_archive(&forged, &archive)),
            "archive_signature_mismatch"
        );
        // The signature of another archive, with this archive's hash.
        let mut swapped = pair.sign_archive(b"something else");
        swapped.sha256 = signature.sha256.clone();
        assert_eq!(
            reason(pair.public().verify_archive(&swapped, &archive)),
            "archive_signature_mismatch"
        );
    }

    #[test]
    fn key_files_round_trip_and_refuse_mismatches() {
        let pair = KeyPair::generate().unwrap();
        let again = KeyPair::from_secret_json(&pair.to_secret_json()).unwrap();
        assert_eq!(again.public(), pair.public());
        assert_eq!(
            PublicKey::from_json(&pair.public().to_json()).unwrap(),
            pair.public()
        );
        assert_eq!(
            PublicKey::from_json(&pair.to_secret_json()).unwrap(),
            pair.public()
        );
        assert_eq!(pair.public().key_id().len(), 16);

        let other = KeyPair::generate().unwrap();
        let mut forged: serde_json::Value = serde_json::from_str(&pair.to_secret_json()).unwrap();
        forged["public_key"] = other.public().to_base64().into();
        assert_eq!(
            KeyPair::from_secret_json(&forged.to_string())
                .unwrap_err()
                .code(),
            "key_invalid"
        );
        // The identity point is a small-order key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(
            PublicKey::from_bytes(&identity).unwrap_err().code(),
            "key_invalid"
        );
    }
}
