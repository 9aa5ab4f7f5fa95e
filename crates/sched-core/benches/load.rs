//! The loader on a generated `kubectl get pods -A -o json` file (default 100 MiB; set
//! `LOAD_BENCH_MIB` for another size): the loader (`load_bytes`, items deserialized from
//! borrowed raw slices) against the loader it replaced (a `serde_json::Value` tree, each item
//! converted through `serde_path_to_error`), in one run. Throughput is of the file's bytes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use sched_core::bench_cluster::kubectl_pods_json;
use sched_core::model::{Pod, Role, load_bytes};
use serde_json::Value;

/// The previous loader: the whole document as a `Value`, every item converted with
/// `serde_path_to_error` (no kind check).
fn value_tree_loader(json: &str) -> Result<Vec<Pod>, String> {
    let doc: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let Value::Object(mut map) = doc else {
        return Err("not an object".into());
    };
    let Some(Value::Array(items)) = map.remove("items") else {
        return Err("no items".into());
    };
    items
        .into_iter()
        .map(|v| serde_path_to_error::deserialize::<_, Pod>(v).map_err(|e| e.to_string()))
        .collect()
}

fn load(c: &mut Criterion) {
    let mib: usize = std::env::var("LOAD_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let json = kubectl_pods_json(mib << 20);
    let pods = load_bytes("pods.json", json.as_bytes(), Role::Pods)
        .expect("generated file loads")
        .pods;
    assert_eq!(
        value_tree_loader(&json).expect("old loader").len(),
        pods.len()
    );
    let mut g = c.benchmark_group("load_pods");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(json.len() as u64));
    g.bench_with_input(BenchmarkId::new("raw_slices", mib), &json, |b, json| {
        b.iter(|| load_bytes("pods.json", json.as_bytes(), Role::Pods).map(|o| o.pods.len()))
    });
    g.bench_with_input(BenchmarkId::new("value_tree", mib), &json, |b, json| {
        b.iter(|| value_tree_loader(json).map(|p| p.len()))
    });
    g.finish();
}

/// criterion's generated entry points (undocumented by design).
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::load);
}
criterion_main!(harness::benches);
