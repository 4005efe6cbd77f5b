//! The deployment files (Kubernetes manifests against the Kubernetes
//! schemas, systemd units, configuration reference) are checked by the
//! Python suite in `deploy/tests`; this runs it as part of `cargo test`.

#[test]
fn deploy_files_validate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(root.join("deploy/tests/run"))
        .current_dir(&root)
        .output()
        .expect("deploy/tests/run must be runnable (python3 and pip are needed)");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "deploy/tests failed:\n{text}");
    assert!(text.contains("passed"), "no tests ran:\n{text}");
}
