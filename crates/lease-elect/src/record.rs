//! The leader election record, in client-go's JSON annotation format.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The record a [`ResourceLock`](crate::ResourceLock) stores: who holds the lease, for how
/// long, and how many times it changed hands.
///
/// It serializes to exactly client-go's `LeaderElectionRecord` JSON (the
/// `control-plane.alpha.kubernetes.io/leader` annotation format): camelCase names, times as
/// RFC 3339 strings in UTC with second precision, a zero (absent) time as `null`. Records
/// written by client-go, including its newer `strategy` and `preferredHolder` fields, read
/// back here, and ours read in client-go.
///
/// ```
/// use lease_elect::LeaderElectionRecord;
///
/// let json = r#"{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2026-11-21T12:00:00Z","renewTime":"2026-11-21T12:00:05Z","leaderTransitions":0}"#;
/// let record: LeaderElectionRecord = serde_json::from_str(json)?;
/// assert_eq!(record.holder_identity, "a");
/// assert_eq!(serde_json::to_string(&record)?, json);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The record is for the elector's bookkeeping and for observers. Timestamps in it are
/// informational: no elector in this crate compares `renewTime` with its own wall clock
/// to decide expiry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderElectionRecord {
    /// The identity of the holder. Empty means nobody holds the lease (it was released) and
    /// any candidate may acquire it at once.
    #[serde(default)]
    pub holder_identity: String,
    /// How long, in seconds, candidates wait without seeing the record change before they
    /// may take the lease over.
    #[serde(default)]
    pub lease_duration_seconds: u32,
    /// When the current holder acquired the lease (the holder's wall clock). `None` is
    /// client-go's zero time, written as `null`.
    #[serde(default, with = "rfc3339_opt")]
    pub acquire_time: Option<SystemTime>,
    /// When the current holder last renewed the lease (the holder's wall clock).
    #[serde(default, with = "rfc3339_opt")]
    pub renew_time: Option<SystemTime>,
    /// How many times the lease was taken over. Electors of this crate increase it by one at
    /// the start of every leadership term (client-go does so when the holder changes).
    #[serde(default)]
    pub leader_transitions: u64,
    /// client-go's coordinated leader election strategy. Kept when read, omitted when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// client-go's preferred holder (coordinated leader election): a holder of another
    /// identity steps down and releases, and the preferred candidate takes over (see
    /// [`LeaderElector::try_acquire_or_renew`](crate::LeaderElector::try_acquire_or_renew)).
    /// Omitted when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_holder: Option<String>,
}

impl LeaderElectionRecord {
    /// A record held by `holder` for `lease_duration_seconds`, acquired and renewed at `now`.
    #[must_use]
    pub fn new(holder: impl Into<String>, lease_duration_seconds: u32, now: SystemTime) -> Self {
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration_seconds,
            acquire_time: Some(now),
            renew_time: Some(now),
            ..LeaderElectionRecord::default()
        }
    }

    /// Whether somebody holds the lease (the holder identity is not empty).
    #[must_use]
    pub fn is_held(&self) -> bool {
        !self.holder_identity.is_empty()
    }

    /// The lease duration as a [`Duration`].
    #[must_use]
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(u64::from(self.lease_duration_seconds))
    }

    /// Serializes to client-go's annotation JSON.
    ///
    /// # Errors
    /// Never in practice; the error type is serde_json's.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// Parses client-go's annotation JSON.
    ///
    /// # Errors
    /// When the text is not a valid record.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// RFC 3339 text for a wall-clock time, in UTC with second precision (client-go's
/// `metav1.Time` format), e.g. `2026-11-21T12:00:00Z`. Sub-second parts are truncated
/// toward the past.
#[must_use]
pub fn format_rfc3339(time: SystemTime) -> String {
    let secs: i64 = match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => {
            let d = e.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            if d.subsec_nanos() > 0 {
                -whole - 1
            } else {
                -whole
            }
        }
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Parses RFC 3339 text (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`) into a wall-clock time.
///
/// # Errors
/// A message saying what is wrong with the text.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let b = text.as_bytes();
    let bad = || format!("invalid RFC 3339 time {text:?}");
    if b.len() < 20 {
        return Err(bad());
    }
    let num = |from: usize, to: usize| -> Result<i64, String> {
        let s = text.get(from..to).ok_or_else(bad)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse::<i64>().map_err(|_| bad())
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, min, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || min > 59
        || sec > 59
    {
        return Err(bad());
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        let digits = &text[start..i.min(start + 9)];
        let scale = 10u32.pow(9 - u32::try_from(digits.len()).map_err(|_| bad())?);
        nanos = digits.parse::<u32>().map_err(|_| bad())? * scale;
    }
    let offset_secs: i64 = match b.get(i) {
        Some(b'Z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (num(i + 1, i + 3)?, num(i + 4, i + 6)?);
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let off = oh * 3600 + om * 60;
            if sign == b'+' { off } else { -off }
        }
        _ => return Err(bad()),
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec - offset_secs;
    // The instant must format back (in UTC) to a four-digit year, or a record we write could
    // not be read again: 0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59Z.
    const FIRST: i64 = -62_135_596_800;
    const LAST: i64 = 253_402_300_799;
    if !(FIRST..=LAST).contains(&secs) {
        return Err(format!("{text:?} is outside years 0001 to 9999 in UTC"));
    }
    let time = if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs.unsigned_abs(), nanos)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nanos.into())
    };
    Ok(time)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's civil calendar algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

mod rfc3339_opt {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<SystemTime>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(t) => serializer.serialize_str(&super::format_rfc3339(*t)),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        let text: Option<String> = Option::deserialize(deserializer)?;
        match text {
            None => Ok(None),
            Some(s) => super::parse_rfc3339(&s)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_outside_four_digit_years_are_refused() {
        // Found by fuzzing: these decode to instants whose UTC text has no four-digit year,
        // so a record written back could not be read again.
        for t in ["0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59-00:01"] {
            assert!(parse_rfc3339(t).is_err(), "{t}");
        }
        for t in ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"] {
            let parsed = parse_rfc3339(t).unwrap();
            assert_eq!(format_rfc3339(parsed), t);
        }
    }

    #[test]
    fn round_trip_client_go_annotation() {
        let json = r#"{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2026-11-21T12:00:00Z","renewTime":"2026-11-21T12:00:10Z","leaderTransitions":3}"#;
        let r = LeaderElectionRecord::from_json(json).unwrap();
        assert_eq!(r.leader_transitions, 3);
        assert_eq!(r.lease_duration_seconds, 15);
        assert_eq!(r.to_json().unwrap(), json);
    }

    #[test]
    fn zero_times_are_null_and_newer_fields_read() {
        let json = r#"{"holderIdentity":"","leaseDurationSeconds":15,"acquireTime":null,"renewTime":null,"leaderTransitions":1,"strategy":"OldestEmulationVersion","preferredHolder":"b"}"#;
        let r = LeaderElectionRecord::from_json(json).unwrap();
        assert!(!r.is_held());
        assert_eq!(r.acquire_time, None);
        assert_eq!(r.preferred_holder.as_deref(), Some("b"));
        assert_eq!(r.to_json().unwrap(), json);
        let released = LeaderElectionRecord {
            lease_duration_seconds: 15,
            leader_transitions: 1,
            ..Default::default()
        };
        assert_eq!(
            released.to_json().unwrap(),
            r#"{"holderIdentity":"","leaseDurationSeconds":15,"acquireTime":null,"renewTime":null,"leaderTransitions":1}"#
        );
    }

    #[test]
    fn rfc3339_offsets_fractions_and_errors() {
        let t = parse_rfc3339("2026-11-21T13:30:00.75+01:30").unwrap();
        assert_eq!(format_rfc3339(t), "2026-11-21T12:00:00Z");
        assert_eq!(
            format_rfc3339(parse_rfc3339("1969-12-31T23:59:59Z").unwrap()),
            "1969-12-31T23:59:59Z"
        );
        assert_eq!(
            format_rfc3339(parse_rfc3339("2024-02-29T00:00:00Z").unwrap()),
            "2024-02-29T00:00:00Z"
        );
        for bad in [
            "",
            "2026-11-21 12:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-21T12:00:00",
            "2026-11-21T24:00:00Z",
            "2026-11-21T12:00:00.Z",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
        assert!(LeaderElectionRecord::from_json(r#"{"renewTime":""}"#).is_err());
    }
}
