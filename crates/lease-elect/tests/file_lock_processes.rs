//! FileLock across processes: three `file_lock_node` processes share one lock file; the
//! leader is killed with SIGKILL (twice), and another must lead within
//! lease duration + 1.2 x retry period, with fencing tokens that never go backwards and terms
//! that never overlap.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const LEASE_MS: u128 = 3_000;
const RENEW_MS: u128 = 2_000;
const RETRY_MS: u128 = 500;

#[derive(Clone, Debug)]
struct Line {
    node: usize,
    kind: String,
    arg: String,
    ms: u128,
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn spawn(node: usize, path: &std::path::Path, log: &Arc<Mutex<Vec<Line>>>) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_file_lock_node"))
        .arg(path)
        .arg(format!("node-{node}"))
        .arg((LEASE_MS / 1000).to_string())
        .arg(RENEW_MS.to_string())
        .arg(RETRY_MS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start file_lock_node");
    let out = child.stdout.take().unwrap();
    let log = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let [kind, arg, ms] = parts[..] {
                log.lock().unwrap().push(Line {
                    node,
                    kind: kind.to_owned(),
                    arg: arg.to_owned(),
                    ms: ms.parse().unwrap(),
                });
            }
        }
    });
    child
}

fn wait_for_leader(
    log: &Arc<Mutex<Vec<Line>>>,
    after_ms: u128,
    alive: &[bool],
    timeout: Duration,
) -> Line {
    let start = Instant::now();
    loop {
        if let Some(l) = log
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.kind == "LEADING" && l.ms >= after_ms && alive[l.node])
        {
            return l.clone();
        }
        assert!(start.elapsed() < timeout, "no leader within {timeout:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The newest term of a live node that has not stopped (on a loaded machine leadership may
/// move before the test kills anybody).
fn current_leader(log: &Arc<Mutex<Vec<Line>>>, alive: &[bool]) -> Option<Line> {
    let log = log.lock().unwrap();
    log.iter()
        .filter(|l| l.kind == "LEADING" && alive[l.node])
        .filter(|l| {
            !log.iter()
                .any(|s| s.kind == "STOPPED" && s.node == l.node && s.arg == l.arg)
        })
        .max_by_key(|l| l.ms)
        .cloned()
}

#[test]
fn killed_leader_is_replaced_within_lease_plus_jittered_retry() {
    let dir = std::env::temp_dir().join(format!(
        "lease-elect-mp-{}-{}",
        std::process::id(),
        now_ms()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("leader.json");
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut children: Vec<Child> = (0..3).map(|i| spawn(i, &path, &log)).collect();
    let mut alive = vec![true; 3];

    let mut leader = wait_for_leader(&log, 0, &alive, Duration::from_secs(20));
    let bound = LEASE_MS + RETRY_MS * 6 / 5;
    let mut delays = Vec::new();
    for _ in 0..2 {
        // Let it renew a few times, then kill the current leader without warning.
        std::thread::sleep(Duration::from_millis(1_200));
        if let Some(current) = current_leader(&log, &alive) {
            leader = current;
        }
        children[leader.node].kill().unwrap(); // SIGKILL
        children[leader.node].wait().unwrap();
        let killed_at = now_ms();
        alive[leader.node] = false;
        let next = wait_for_leader(&log, killed_at, &alive, Duration::from_secs(20));
        assert_ne!(next.node, leader.node);
        delays.push(next.ms - killed_at);
        leader = next;
    }
    std::thread::sleep(Duration::from_millis(300));
    for (i, c) in children.iter_mut().enumerate() {
        if alive[i] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    for d in &delays {
        assert!(
            *d <= bound,
            "failover took {d} ms, more than lease + 1.2 x retry = {bound} ms ({delays:?})"
        );
    }

    // Tokens strictly increase in the order terms start, and no term is valid after a later
    // term started.
    let log = log.lock().unwrap().clone();
    let mut starts: Vec<&Line> = log.iter().filter(|l| l.kind == "LEADING").collect();
    starts.sort_by_key(|l| l.ms);
    assert!(starts.len() >= 3, "{starts:?}");
    let tokens: Vec<u64> = starts.iter().map(|l| l.arg.parse().unwrap()).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens went backwards: {tokens:?}"
    );
    for (i, start) in starts.iter().enumerate().skip(1) {
        for earlier in &starts[..i] {
            let last_valid = log
                .iter()
                .filter(|l| l.kind == "VALID" && l.arg == earlier.arg && l.node == earlier.node)
                .map(|l| l.ms)
                .max()
                .unwrap_or(earlier.ms);
            assert!(
                last_valid <= start.ms,
                "term {} of node {} was valid at {last_valid} after term {} started at {}",
                earlier.arg,
                earlier.node,
                start.arg,
                start.ms
            );
        }
    }
    eprintln!("failover delays after SIGKILL: {delays:?} ms (bound {bound} ms), tokens {tokens:?}");
}
