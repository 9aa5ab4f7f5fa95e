//! The loader's peak memory: loading a generated ~8 MiB `kubectl get pods -A -o json` file
//! from disk (the file's bytes included) peaks at no more than twice the file's size, counted
//! by a counting global allocator (`allocation-counter`) in this test binary of its own.

use sched_core::bench_cluster::kubectl_pods_json;
use sched_core::model::{Role, load_file};

#[test]
fn loading_peaks_at_most_twice_the_file_size() {
    let json = kubectl_pods_json(8 << 20);
    let path = std::env::temp_dir().join(format!(
        "sched-core-load-memory-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, &json).expect("write the generated file");
    let size = json.len() as u64;
    drop(json);
    let mut pods = 0;
    let info = allocation_counter::measure(|| {
        let objects = load_file(&path, Role::Pods).expect("loads");
        pods = objects.pods.len();
    });
    let _ = std::fs::remove_file(&path);
    assert!(pods > 500, "{pods} pods");
    let ratio = info.bytes_max as f64 / size as f64;
    eprintln!(
        "file {size} bytes, {pods} pods, peak {} bytes ({ratio:.2}x the file)",
        info.bytes_max
    );
    assert!(
        info.bytes_max <= 2 * size,
        "peak {} bytes is {ratio:.2}x the file's {size} bytes",
        info.bytes_max
    );
}
