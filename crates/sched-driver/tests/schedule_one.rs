//! kube's `TestSchedulerScheduleOne` (pkg/scheduler/schedule_one_test.go, read at kube v1.34),
//! through the driver: one pod `foo`, one node `node1`, one scheduling cycle and its binding
//! cycle. Ported: "error reserve pod", "error permit pod", "error prebind pod", "bind assumed
//! pod scheduled", "error bind forget pod failed scheduling", with kube's expected assumed
//! pod, forgotten pod, binding and event reason. Not ported: "error pod failed scheduling"
//! (kube mocks the placement algorithm) and "deleting pod" (the engine never queues a pod
//! being deleted, so no cycle runs and no event is sent).
//!
//! Where we differ: kube's Permit plugin returns an `Error` status; the engine's Permit
//! plugins allow, reject or wait, so the case uses a rejection (kube's outcome is the same:
//! unreserved, forgotten, FailedScheduling). The messages are the engine's
//! (`FakeReserve: reserve error`) instead of kube's (`running Reserve plugin "FakeReserve":
//! reserve error`). "Forgotten" is observed as the Reserve plugins' Unreserve and the pod
//! gone from the snapshot.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod};
use sched_core::scheduler::{
    ClusterEvent, PermitDecision, PermitPlugin, ReservePlugin, Scheduler, SchedulerEvent,
};
use sched_core::snapshot::Snapshot;
use sched_driver::{BindError, Binder, Binding, Driver, DriverEvent};

type Log = Arc<Mutex<Vec<String>>>;

/// Records what happens to the pod: `assume` (Reserve runs right after the assume),
/// `forget` (Unreserve), `prebind`, `bind`, `postbind`.
struct Recorder {
    log: Log,
    fail_reserve: bool,
}

impl ReservePlugin for Recorder {
    fn name(&self) -> &str {
        "FakeReserve"
    }
    fn reserve(&self, pod: &Pod, node: &str) -> Result<(), sched_core::scheduler::ReserveError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("assume {} {node}", pod.key()));
        if self.fail_reserve {
            Err("reserve error".into())
        } else {
            Ok(())
        }
    }
    fn unreserve(&self, pod: &Pod, node: &str) {
        self.log
            .lock()
            .unwrap()
            .push(format!("forget {} {node}", pod.key()));
    }
}

struct FakePermit;

impl PermitPlugin for FakePermit {
    fn name(&self) -> &str {
        "FakePermit"
    }
    fn permit(&self, _pod: &Pod, _node: &str) -> PermitDecision {
        PermitDecision::Reject("permit error".into())
    }
}

struct FakeBinder {
    log: Log,
    prebind_error: bool,
    bind_error: bool,
}

#[sched_driver::async_trait]
impl Binder for FakeBinder {
    async fn pre_bind(&self, b: &Binding) -> Result<(), BindError> {
        self.log.lock().unwrap().push(format!("prebind {}", b.pod));
        if self.prebind_error {
            return Err(BindError::Refused("on PreBind".into()));
        }
        Ok(())
    }
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("bind {} {}", b.pod, b.node));
        if self.bind_error {
            return Err(BindError::Refused("binder".into()));
        }
        Ok(())
    }
    async fn post_bind(&self, b: &Binding) {
        self.log.lock().unwrap().push(format!("postbind {}", b.pod));
    }
}

#[derive(Clone, Copy)]
struct Case {
    name: &'static str,
    reserve_error: bool,
    permit_error: bool,
    prebind_error: bool,
    bind_error: bool,
    expect_forget: bool,
    expect_bind: bool,
    event_reason: &'static str,
    /// The engine's message in the event (the failed binding's for a bind error).
    expect_message: Option<&'static str>,
}

fn node1() -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "node1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn foo() -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "foo", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause"}]}
    }))
    .unwrap()
}

async fn run_case(c: &Case) {
    let log: Log = Arc::default();
    let snapshot = Snapshot::from_objects(vec![node1()], vec![]).unwrap();
    let config = SchedulerConfiguration::v1_34_default();
    let mut scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)
        .unwrap()
        .with_reserve(Recorder {
            log: log.clone(),
            fail_reserve: c.reserve_error,
        });
    if c.permit_error {
        scheduler = scheduler.with_permit(FakePermit);
    }
    let driver = Driver::builder(scheduler)
        .binder(FakeBinder {
            log: log.clone(),
            prebind_error: c.prebind_error,
            bind_error: c.bind_error,
        })
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = tokio::spawn(driver.run(std::future::pending()));
    handle.apply(ClusterEvent::add(foo())).unwrap();
    // The first event of the cycle: kube's Scheduled or FailedScheduling (or the engine's
    // failed binding, which kube reports as FailedScheduling).
    let (reason, message) = loop {
        match events.recv().await.unwrap() {
            DriverEvent::Scheduler(SchedulerEvent::Scheduled { .. }) => {
                break ("Scheduled", None);
            }
            DriverEvent::Scheduler(SchedulerEvent::FailedScheduling { message, .. }) => {
                break ("FailedScheduling", Some(message));
            }
            DriverEvent::Scheduler(SchedulerEvent::BindingFailed { message, .. }) => {
                break ("FailedScheduling", Some(message));
            }
            _ => {}
        }
    };
    // One cycle only, as kube's test: stop before the backoff ends.
    handle.shutdown();
    let sched = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let name = c.name;
    assert_eq!(reason, c.event_reason, "{name}: event reason");
    assert_eq!(message.as_deref(), c.expect_message, "{name}: message");
    let log = log.lock().unwrap().clone();
    assert_eq!(log[0], "assume default/foo node1", "{name}: assumed pod");
    assert_eq!(
        log.contains(&"forget default/foo node1".to_string()),
        c.expect_forget,
        "{name}: forgotten pod ({log:?})"
    );
    assert_eq!(
        log.contains(&"bind default/foo node1".to_string()),
        c.expect_bind,
        "{name}: binding ({log:?})"
    );
    // PostBind runs after a successful binding only.
    assert_eq!(
        log.contains(&"postbind default/foo".to_string()),
        c.event_reason == "Scheduled",
        "{name}: PostBind ({log:?})"
    );
    let on_node = sched.snapshot().node_of("default/foo");
    assert_eq!(
        on_node,
        (!c.expect_forget).then_some("node1"),
        "{name}: the snapshot"
    );
}

#[tokio::test(start_paused = true)]
async fn test_scheduler_schedule_one() {
    let base = Case {
        name: "",
        reserve_error: false,
        permit_error: false,
        prebind_error: false,
        bind_error: false,
        expect_forget: true,
        expect_bind: false,
        event_reason: "FailedScheduling",
        expect_message: None,
    };
    let table = [
        Case {
            name: "error reserve pod",
            reserve_error: true,
            expect_message: Some("FakeReserve: reserve error"),
            ..base
        },
        Case {
            name: "error permit pod",
            permit_error: true,
            expect_message: Some("FakePermit: permit error"),
            ..base
        },
        Case {
            name: "error prebind pod",
            prebind_error: true,
            expect_message: Some("binding refused: on PreBind"),
            ..base
        },
        Case {
            name: "bind assumed pod scheduled",
            expect_forget: false,
            expect_bind: true,
            event_reason: "Scheduled",
            ..base
        },
        Case {
            name: "error bind forget pod failed scheduling",
            bind_error: true,
            expect_bind: true,
            expect_message: Some("binding refused: binder"),
            ..base
        },
    ];
    for c in &table {
        run_case(c).await;
    }
}
