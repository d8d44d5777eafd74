//! What "now" is for the scheduler: the system clock in Osprey, a clock the test moves by hand
//! in tests (so a reminder "in 5 min" fires without anyone waiting five minutes, while the
//! scheduler still runs as a real task on a real runtime).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;

/// A source of wall-clock time the scheduler can sleep on.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Resolves at (or after) `deadline_ms`, or earlier: the scheduler re-reads `now_ms` after
    /// every wake, so waking early is harmless and waking late is not.
    fn sleep_until(&self, deadline_ms: i64) -> BoxFuture<'static, ()>;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

/// The longest single sleep: tokio's timers run on the monotonic clock, which stops while the
/// machine is suspended, so a long sleep could wake hours after its wall-clock time. Waking once
/// a minute to re-read the wall clock bounds that lateness.
const MAX_SLEEP: Duration = Duration::from_secs(60);

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        osprey_db::now_ms()
    }

    fn sleep_until(&self, deadline_ms: i64) -> BoxFuture<'static, ()> {
        let wait = Duration::from_millis((deadline_ms - self.now_ms()).max(0) as u64);
        Box::pin(tokio::time::sleep(wait.min(MAX_SLEEP)))
    }
}

/// A clock that only moves when told to. Sleepers wake as soon as it passes their deadline.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<watch::Sender<i64>>,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        ManualClock {
            now: Arc::new(watch::Sender::new(start_ms)),
        }
    }

    pub fn set(&self, now_ms: i64) {
        self.now.send_replace(now_ms);
    }

    pub fn advance(&self, by: Duration) {
        self.now
            .send_modify(|now| *now += i64::try_from(by.as_millis()).unwrap_or(i64::MAX));
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        *self.now.borrow()
    }

    fn sleep_until(&self, deadline_ms: i64) -> BoxFuture<'static, ()> {
        let mut receiver = self.now.subscribe();
        Box::pin(async move {
            // `wait_for` fails only when the sender is gone, and then time stands still forever.
            if receiver.wait_for(|now| *now >= deadline_ms).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manual_sleeper_wakes_when_the_clock_passes_its_deadline() {
        let clock = ManualClock::new(1_000);
        let sleeper = tokio::spawn(clock.sleep_until(5_000));
        clock.advance(Duration::from_millis(3_000));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.set(5_000);
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("the sleeper woke")
            .unwrap();
        assert_eq!(clock.now_ms(), 5_000);
    }
}
