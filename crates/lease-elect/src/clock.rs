//! Time as the elector sees it: a monotonic clock, a wall clock, and sleeping.

use std::fmt;
use std::future::Future;
use std::ops::{Add, Sub};
use std::pin::Pin;
use std::time::{Duration, SystemTime};

/// A point on a [`Clock`]'s monotonic time line, measured from the clock's own origin.
/// Instants of different clocks are not comparable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Duration);

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant(Duration::ZERO);

    /// The instant `since_origin` after the clock's origin.
    #[must_use]
    pub const fn from_origin(since_origin: Duration) -> Self {
        Instant(since_origin)
    }

    /// Time since the clock's origin.
    #[must_use]
    pub const fn since_origin(self) -> Duration {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    #[must_use]
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(rhs))
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(rhs))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A boxed, `Send` future returned by [`Clock::sleep_until`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The elector's only source of time: a monotonic clock for deadlines and expiry, a wall
/// clock for the record's informational timestamps, and sleeping.
///
/// Every loop of this crate reads time and sleeps through a `Clock`, so a simulated clock
/// runs the same code in simulated time. Implementations must be monotonic (`now` never goes
/// back) and `sleep_until(d)` must not resolve before `now() >= d`.
pub trait Clock: Send + Sync + 'static {
    /// The current monotonic instant.
    fn now(&self) -> Instant;

    /// The current wall-clock time (used only for `acquireTime`/`renewTime`).
    fn wall(&self) -> SystemTime;

    /// A future that resolves once `now() >= deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;

    /// A future that resolves after `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> Sleep {
        self.sleep_until(self.now() + duration)
    }
}

/// The real clock: tokio's monotonic time and the system's wall clock.
///
/// Because it sleeps with tokio's timers, it follows tokio's paused time in tests too.
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now. Needs no runtime to be created.
    #[must_use]
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant(tokio::time::Instant::now().saturating_duration_since(self.origin))
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(tokio::time::sleep_until(tokio_instant(
            self.origin,
            deadline.0,
        )))
    }
}

/// A simulated clock: a view of tokio's (paused) time with its own offset and rate.
///
/// Under a paused tokio runtime (`#[tokio::test(start_paused = true)]` or
/// `tokio::time::pause()`), time moves only when the test calls [`SimClock::advance`] or when
/// every task is idle, in which case tokio jumps straight to the next timer: a deterministic
/// discrete-event simulation that runs an hour of election in milliseconds.
///
/// Each elector may get its own view: `rate` is how fast its monotonic clock runs relative to
/// simulated time (1.0 = exact, 1.01 = 1% fast), `offset` shifts its monotonic origin, and
/// `wall_offset` shifts its wall clock (which the election logic never trusts).
///
/// ```
/// use std::time::Duration;
/// use lease_elect::{Clock, SimClock};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?.block_on(async {
/// let fast = SimClock::new().with_rate(1.5);
/// let t0 = fast.now();
/// SimClock::advance(Duration::from_secs(2)).await;
/// assert_eq!(fast.now().saturating_duration_since(t0), Duration::from_secs(3));
/// # });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct SimClock {
    origin: tokio::time::Instant,
    offset: Duration,
    rate: f64,
    wall_base: SystemTime,
}

impl SimClock {
    /// The wall time at a simulation's start: 2026-11-21T12:00:00Z.
    pub const WALL_START_SECS: u64 = 1_795_262_400;

    /// A clock at rate 1.0, origin now, wall clock starting at 2026-11-21T12:00:00Z.
    #[must_use]
    pub fn new() -> Self {
        SimClock {
            origin: tokio::time::Instant::now(),
            offset: Duration::ZERO,
            rate: 1.0,
            wall_base: SystemTime::UNIX_EPOCH + Duration::from_secs(Self::WALL_START_SECS),
        }
    }

    /// Sets the rate of this clock relative to simulated time (must be > 0).
    ///
    /// # Panics
    /// When `rate` is not a finite positive number.
    #[must_use]
    pub fn with_rate(mut self, rate: f64) -> Self {
        assert!(rate.is_finite() && rate > 0.0, "clock rate must be > 0");
        self.rate = rate;
        self
    }

    /// Shifts this clock's monotonic readings by `offset`.
    #[must_use]
    pub fn with_offset(mut self, offset: Duration) -> Self {
        self.offset = offset;
        self
    }

    /// Shifts this clock's wall-clock readings (positive: ahead, negative: behind), in
    /// seconds.
    #[must_use]
    pub fn with_wall_offset(mut self, seconds: i64) -> Self {
        let d = Duration::from_secs(seconds.unsigned_abs());
        self.wall_base = if seconds >= 0 {
            self.wall_base + d
        } else {
            self.wall_base - d
        };
        self
    }

    /// The rate of this clock.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Moves simulated (tokio) time forward by `duration`, firing due timers. Needs paused
    /// time.
    pub async fn advance(duration: Duration) {
        tokio::time::advance(duration).await;
    }

    fn local_elapsed(&self) -> Duration {
        let global = tokio::time::Instant::now().saturating_duration_since(self.origin);
        self.to_local(global)
    }

    fn to_local(&self, global: Duration) -> Duration {
        if self.rate == 1.0 {
            return global;
        }
        duration_from_nanos_f64((global.as_nanos() as f64 * self.rate).floor())
    }

    /// The earliest simulated time (since the origin) at which this clock reads `local`.
    fn to_global(&self, local: Duration) -> Duration {
        if self.rate == 1.0 {
            return local;
        }
        let mut global = duration_from_nanos_f64((local.as_nanos() as f64 / self.rate).ceil());
        while self.to_local(global) < local {
            global += Duration::from_nanos(1);
        }
        global
    }
}

impl Default for SimClock {
    fn default() -> Self {
        SimClock::new()
    }
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        Instant(self.offset + self.local_elapsed())
    }

    fn wall(&self) -> SystemTime {
        self.wall_base + self.local_elapsed()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        let local = deadline.0.saturating_sub(self.offset);
        let global = self.to_global(local);
        Box::pin(tokio::time::sleep_until(tokio_instant(self.origin, global)))
    }
}

/// `origin + since`, or about thirty years from now when that is not representable (a
/// deadline that never comes, such as a leader-for-life term's).
fn tokio_instant(origin: tokio::time::Instant, since: Duration) -> tokio::time::Instant {
    origin
        .checked_add(since)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365 * 30))
}

fn duration_from_nanos_f64(nanos: f64) -> Duration {
    if nanos <= 0.0 {
        return Duration::ZERO;
    }
    let secs = (nanos / 1e9).floor();
    let rem = nanos - secs * 1e9;
    Duration::new(secs as u64, (rem as u32).min(999_999_999))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sim_clock_wakes_at_the_deadline_for_any_rate() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for _ in 0..200 {
            let rate = rng.random_range(0.5..2.0);
            let c = SimClock::new()
                .with_rate(rate)
                .with_offset(Duration::from_nanos(rng.random_range(0..10_000_000_000)));
            let deadline = c.now() + Duration::from_nanos(rng.random_range(1..30_000_000_000));
            c.sleep_until(deadline).await;
            let now = c.now();
            assert!(
                now >= deadline,
                "rate {rate}: woke at {now} before {deadline}"
            );
            // tokio's timers round up to the next millisecond of simulated time.
            assert!(
                now <= deadline + Duration::from_millis(1).mul_f64(rate) + Duration::from_nanos(2)
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn sim_clock_rate_offset_and_sleep() {
        let c = SimClock::new()
            .with_rate(0.5)
            .with_offset(Duration::from_secs(100));
        assert_eq!(c.now(), Instant::from_origin(Duration::from_secs(100)));
        let deadline = c.now() + Duration::from_secs(3);
        c.sleep_until(deadline).await;
        assert!(c.now() >= deadline);
        assert!(c.now() < deadline + Duration::from_millis(2));
        assert_eq!(
            crate::format_rfc3339(c.wall()),
            "2026-11-21T12:00:03Z",
            "wall time follows the local rate"
        );
        let behind = SimClock::new().with_wall_offset(-60);
        assert_eq!(crate::format_rfc3339(behind.wall()), "2026-11-21T11:59:00Z");
    }
}
