//! Leader for life (operator-sdk's mode) on an in-process lock: the first participant leads
//! until it stops; the other waits with exponential backoff (1 s to 16 s, jitter 0.2) and
//! takes over once the record is gone.

use std::time::Duration;

use lease_elect::{LeaderForLife, MemoryLock, MemoryStore};

#[tokio::main]
async fn main() {
    let store = MemoryStore::new("operator");
    let a = LeaderForLife::new(MemoryLock::new(&store, "a"));
    let b = LeaderForLife::new(MemoryLock::new(&store, "b"));

    let (guard_a, version_a) = a.become_leader().await;
    println!("a leads for life, token {}", guard_a.token());

    let waiter = tokio::spawn(async move {
        let (guard_b, _) = b.become_leader().await;
        println!("b leads for life, token {}", guard_b.token());
    });

    tokio::time::sleep(Duration::from_secs(3)).await;
    println!("a steps down");
    a.step_down(&guard_a, &version_a)
        .await
        .expect("delete own record");
    waiter.await.expect("b took over");
}
