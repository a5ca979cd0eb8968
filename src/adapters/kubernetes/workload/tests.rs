//! The workload walk against a mock API server (tower-test, as kube-rs's
//! controller examples do): each scenario serves the objects of one kind of
//! cluster and records which requests the walk made.

use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::*;
use crate::evidence::workload::PodsListed;

/// What the mock API server answers for one path; `None` is a 404.
type Routes = fn(&str) -> Option<(StatusCode, Value)>;

/// A client whose requests `routes` answers, and the paths it was asked for.
fn mock_cluster(routes: Routes) -> (Cluster, Arc<Mutex<Vec<String>>>) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    tokio::spawn(async move {
        while let Some((request, reply)) = handle.next_request().await {
            let path = request.uri().path().to_owned();
            log.lock().unwrap().push(path.clone());
            let (status, body) = routes(&path).unwrap_or_else(|| status(404, "NotFound"));
            reply.send_response(
                Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(body.to_string().into_bytes()))
                    .unwrap(),
            );
        }
    });
    let cluster = Cluster {
        client: kube::Client::new(service, "default"),
        eks: None,
        url: "https://mock-api-server".to_owned(),
    };
    (cluster, asked)
}

fn status(code: u16, reason: &str) -> (StatusCode, Value) {
    (
        StatusCode::from_u16(code).unwrap(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("{reason} (mock)"), "reason": reason, "code": code}),
    )
}

fn ok(body: Value) -> Option<(StatusCode, Value)> {
    Some((StatusCode::OK, body))
}

fn list(kind: &str, api_version: &str, items: Value) -> Value {
    json!({"apiVersion": api_version, "kind": format!("{kind}List"), "metadata": {}, "items": items})
}

/// A plain cluster: a TargetGroupBinding, the Service, two pods of one
/// ReplicaSet of Deployment `web`, PodMetrics, and no HPA.
fn plain(path: &str) -> Option<(StatusCode, Value)> {
    match path {
        "/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings" => ok(list(
            "TargetGroupBinding",
            "elbv2.k8s.aws/v1beta1",
            json!([{"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
                    "metadata": {"name": "web", "namespace": "shop"},
                    "spec": {"targetGroupARN": "arn:tg-web", "serviceRef": {"name": "web", "port": 80}}}]),
        )),
        "/api/v1/namespaces/shop/services/web" => ok(json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}}})),
        "/api/v1/namespaces/shop/pods" => ok(list(
            "Pod",
            "v1",
            json!([pod("web-abc-1"), oom_killed(pod("web-abc-2"))]),
        )),
        "/api/v1/namespaces/shop/events" => ok(list(
            "Event",
            "v1",
            json!([{"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "BackOff",
                    "metadata": {"name": "web-abc-2.1", "namespace": "shop"},
                    "involvedObject": {"kind": "Pod", "name": "web-abc-2", "namespace": "shop"},
                    "message": "Back-off restarting failed container app", "count": 4,
                    "lastTimestamp": "2026-11-29T11:50:00Z"}]),
        )),
        "/apis/apps/v1/namespaces/shop/replicasets" => ok(list(
            "ReplicaSet",
            "apps/v1",
            json!([{"metadata": {"name": "web-abc", "namespace": "shop",
                    "creationTimestamp": "2026-11-29T08:00:00Z",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1"}]},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}}},
                   {"metadata": {"name": "web-old", "namespace": "shop",
                    "creationTimestamp": "2026-11-20T08:00:00Z",
                    "annotations": {"deployment.kubernetes.io/revision": "6"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1"}]},
                    "spec": {"selector": {"matchLabels": {"app": "web"}},
                             "template": {"spec": {"containers": [{"name": "app", "image": "web:1",
                                 "env": [{"name": "TOKEN", "value": "hunter2"}],
                                 "envFrom": [{"configMapRef": {"name": "web-config"}}]}]}}}}]),
        )),
        "/api/v1/events" => ok(list("Event", "v1", json!([]))),
        "/api/v1/namespaces/shop/configmaps" => ok(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {},
            "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                       "metadata": {"name": "web-config", "namespace": "shop",
                                    "creationTimestamp": "2026-11-01T00:00:00Z",
                                    "managedFields": [{"manager": "kubectl", "operation": "Update",
                                                       "apiVersion": "v1", "time": "2026-11-29T11:30:00Z"}]}}]})),
        "/apis/apps/v1/namespaces/shop/deployments/web" => ok(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "annotations": {"deployment.kubernetes.io/revision": "7"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {}}})),
        "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers" => {
            ok(list("HorizontalPodAutoscaler", "autoscaling/v2", json!([])))
        }
        "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods" => ok(list(
            "PodMetrics",
            "metrics.k8s.io/v1beta1",
            json!([{"metadata": {"name": "web-abc-1", "namespace": "shop"},
                    "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}}]}]),
        )),
        _ => None,
    }
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "r1"}]},
           "spec": {"nodeName": "node-a", "containers": [{"name": "app",
                    "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
}

/// The pod, restarted once after its container was OOMKilled.
fn oom_killed(mut pod: Value) -> Value {
    pod["status"]["containerStatuses"] = json!([{
        "name": "app", "ready": true, "restartCount": 1, "image": "web:1", "imageID": "",
        "state": {"running": {"startedAt": "2026-11-29T11:48:00Z"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                     "finishedAt": "2026-11-29T11:47:58Z"}}}]);
    pod
}

fn target(bindings: Option<TargetGroupBindings>) -> WorkloadTarget {
    WorkloadTarget {
        cluster: Some("prod".to_owned()),
        target_group_arn: "arn:tg-web".to_owned(),
        target_group_name: "k8s-shop-web-0a1b2c".to_owned(),
        service_hint: Some(ServiceRef {
            namespace: "shop".to_owned(),
            name: "web".to_owned(),
            source: MappingSource::NameGuess,
        }),
        bindings,
    }
}

async fn run(
    routes: Routes,
    bindings: Option<TargetGroupBindings>,
) -> (Workload, Option<PodsListed>, Vec<String>) {
    let (cluster, asked) = mock_cluster(routes);
    let (sender, receiver) = oneshot::channel();
    let workload = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        walk(&cluster, None, &target(bindings), sender),
    )
    .await
    .expect("the walk finishes")
    .expect("the walk succeeds");
    let listed = receiver.await.ok();
    let asked = asked.lock().unwrap().clone();
    (workload, listed, asked)
}

#[tokio::test]
async fn a_bound_service_without_an_hpa_is_walked_to_its_deployment() {
    let (w, listed, asked) = run(plain, None).await;
    assert_eq!(w.service.source, MappingSource::TargetGroupBinding);
    assert_eq!(w.pods.len(), 2);
    assert_eq!(w.pods[0].cpu_request(), Some(0.5));
    assert_eq!(w.deployment.as_ref().map(|d| d.name.as_str()), Some("web"));
    assert_eq!(
        w.deployment.as_ref().and_then(|d| d.revision.as_deref()),
        Some("7")
    );
    assert!(w.hpa.is_none());
    let restarted = &w.pods[1].lifecycle;
    assert_eq!(w.pods[1].restarts, 1);
    let termination = restarted.last_termination.as_ref().expect("lastState read");
    assert_eq!(
        (termination.reason.as_str(), termination.exit_code),
        ("OOMKilled", 137)
    );
    assert_eq!(
        restarted.running_since.map(|t| t.to_rfc3339()),
        Some("2026-11-29T11:48:00+00:00".to_owned())
    );
    assert_eq!(restarted.warnings[0].reason, "BackOff");
    assert_eq!(restarted.warnings[0].count, 4);
    assert!(w.pods[0].lifecycle.warnings.is_empty());
    assert_eq!(w.snapshot.as_ref().map(Vec::len), Some(1));
    assert!(w.partial.is_empty(), "{:?}", w.partial);
    // The revisions, newest first, with their templates: variable names, never values.
    let revisions = &w.deployment.as_ref().unwrap().revisions;
    assert_eq!(revisions.len(), 2);
    let old = revisions.iter().find(|r| r.number == Some(6)).unwrap();
    let template = old.template.as_ref().unwrap();
    assert_eq!(template.containers[0].env_names, ["TOKEN"]);
    assert_eq!(template.config_maps, ["web-config"]);
    assert!(!format!("{w:?}").contains("hunter2"));
    // When each ConfigMap was last written, from its managed fields.
    assert_eq!(
        w.activity.config_maps[0].changed_at.map(|t| t.to_rfc3339()),
        Some("2026-11-29T11:30:00+00:00".to_owned())
    );
    let listed = listed.expect("the pods were announced");
    assert_eq!(listed.namespace, "shop");
    assert_eq!(
        listed.cluster.as_deref(),
        Some("prod"),
        "series are read in the walk's cluster"
    );
    assert_eq!(listed.pods, ["web-abc-1", "web-abc-2"]);
    // Pod warnings and HPA events in the namespace, Karpenter's and the
    // autoscaler's cluster-wide: four lists, none per pending pod.
    assert_eq!(
        asked.iter().filter(|p| p.contains("events")).count(),
        4,
        "no event list per pending pod: {asked:?}"
    );
    // Nothing pending: no node is listed for room; the pods' own nodes are
    // read by name (the placement), each once.
    assert!(
        asked
            .iter()
            .filter(|p| p.contains("/nodes"))
            .all(|p| p.contains("/nodes/")),
        "nothing pending, no list of every node: {asked:?}"
    );
}

#[tokio::test]
async fn bindings_read_alongside_aws_are_not_listed_again() {
    let mut services = std::collections::BTreeMap::new();
    services.insert(
        "arn:tg-web".to_owned(),
        ServiceRef {
            namespace: "shop".to_owned(),
            name: "web".to_owned(),
            source: MappingSource::TargetGroupBinding,
        },
    );
    let bindings = TargetGroupBindings {
        services,
        unreadable: None,
    };
    let (w, _, asked) = run(plain, Some(bindings)).await;
    assert_eq!(w.service.source, MappingSource::TargetGroupBinding);
    assert!(
        !asked.iter().any(|p| p.contains("targetgroupbindings")),
        "{asked:?}"
    );
}

fn v1_only(path: &str) -> Option<(StatusCode, Value)> {
    match path {
        "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers" => None,
        "/apis/autoscaling/v1/namespaces/shop/horizontalpodautoscalers" => ok(list(
            "HorizontalPodAutoscaler",
            "autoscaling/v1",
            json!([{"metadata": {"name": "web", "namespace": "shop"},
                    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                             "minReplicas": 2, "maxReplicas": 6, "targetCPUUtilizationPercentage": 80},
                    "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 35}}]),
        )),
        other => plain(other),
    }
}

#[tokio::test]
async fn a_cluster_with_only_autoscaling_v1_still_yields_its_hpa() {
    let (w, _, _) = run(v1_only, None).await;
    let hpa = w.hpa.expect("the v1 HPA");
    assert_eq!(hpa.api_version, "autoscaling/v1");
    assert_eq!(hpa.max_replicas, 6);
    assert_eq!(hpa.target_cpu_utilization, Some(80));
    assert!(hpa.created_as_v1);
}

fn metrics_forbidden(path: &str) -> Option<(StatusCode, Value)> {
    match path {
        "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods" => Some(status(403, "Forbidden")),
        other => plain(other),
    }
}

#[tokio::test]
async fn forbidden_pod_metrics_are_a_named_partial_not_a_failure() {
    let (w, _, _) = run(metrics_forbidden, None).await;
    assert!(w.snapshot.is_none());
    let (part, reason) = &w.partial[0];
    assert_eq!(part, "metrics.k8s.io pods");
    assert!(reason.contains("403 Forbidden"), "{reason}");
    assert!(
        reason.contains("clusterrole"),
        "says what to grant: {reason}"
    );
    assert!(w.deployment.is_some(), "the rest of the walk goes on");
}

fn no_controller(path: &str) -> Option<(StatusCode, Value)> {
    match path {
        "/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings" => None,
        other => plain(other),
    }
}

#[tokio::test]
async fn without_target_group_bindings_the_service_comes_from_aws_hints() {
    let (w, _, _) = run(no_controller, None).await;
    assert_eq!(w.service.source, MappingSource::NameGuess);
    assert_eq!(w.service.name, "web");
    assert!(
        w.partial
            .iter()
            .any(|(part, reason)| part == "targetgroupbindings" && reason.starts_with("404")),
        "{:?}",
        w.partial
    );
}

fn no_selector(path: &str) -> Option<(StatusCode, Value)> {
    match path {
        "/api/v1/namespaces/shop/services/web" => ok(json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {}})),
        other => plain(other),
    }
}

#[tokio::test]
async fn a_service_without_a_selector_fails_the_walk_and_announces_no_pods() {
    let (cluster, _) = mock_cluster(no_selector);
    let (sender, receiver) = oneshot::channel();
    let error = walk(&cluster, None, &target(None), sender)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("has no selector"), "{error}");
    assert!(receiver.await.is_err(), "the sender was dropped unsent");
}
