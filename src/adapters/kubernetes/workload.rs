//! The workload walk: target group -> Service -> pods (announced at once so
//! their series are queried meanwhile), ReplicaSets -> Deployment, HPA,
//! PodMetrics; and, for pending pods, their events and the nodes' room. One
//! function per object kind. Read-only: get and list only.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::{v1 as hpa_v1, v2 as hpa_v2};
use k8s_openapi::api::core::v1::{Event, Node, Pod, Service};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, ObjectList};
use serde_json::Value;

use super::connection::{Cluster, gap};
use super::timestamps::{condition, time_of};
use crate::error::Result;
use crate::evidence::service_map::{MappingSource, ServiceRef};
use crate::evidence::workload::{
    ContainerInfo, DeploymentInfo, HpaInfo, NodeCapacity, NodeProvisioning, PodInfo, PodLifecycle,
    PodUsage, PodWarning, PodsListed, TargetGroupBindings, Termination, Workload, WorkloadTarget,
    bytes, cpu_cores,
};

/// Parts of the walk that could not be read, and why.
type Partial = Vec<(String, String)>;

/// Walks from the target group to its workload; the pods' names go to
/// `pods_listed` as soon as they are listed.
pub async fn walk(
    cluster: &Cluster,
    cluster_name: Option<String>,
    target: &WorkloadTarget,
    pods_listed: crate::evidence::ports::PodsListedSender,
) -> Result<Workload> {
    let mut partial = Partial::new();
    let bindings = match &target.bindings {
        Some(bindings) => bindings.clone(),
        None => list_bindings(cluster).await?,
    };
    if let Some(reason) = &bindings.unreadable {
        partial.push(("targetgroupbindings".to_owned(), reason.clone()));
    }
    let service_ref = bindings
        .services
        .get(&target.target_group_arn)
        .cloned()
        .or_else(|| target.service_hint.clone())
        .ok_or_else(|| {
            gap(
                format!(
                    "no TargetGroupBinding names {} and neither its tags nor its name point at a service",
                    target.target_group_name
                ),
                false,
            )
        })?;
    let ns = service_ref.namespace.clone();
    let selector = service_selector(cluster, &service_ref).await?;
    let labels = selector_string(&selector);
    let by_labels = ListParams::default().labels(&labels);

    let pods = async {
        let pods = list_pods(cluster, &ns, &by_labels, &labels).await;
        if let Ok(pods) = &pods {
            // The receiver may be gone (the gathering ran out of time): nothing to do then.
            let _ = pods_listed.send(PodsListed::of(target.cluster.clone(), ns.clone(), pods));
        }
        pods
    };
    let sets_api = Api::<ReplicaSet>::namespaced(cluster.client.clone(), &ns);
    let hpas_api = Api::<hpa_v2::HorizontalPodAutoscaler>::namespaced(cluster.client.clone(), &ns);
    let every = ListParams::default();
    let sets = sets_api.list(&by_labels);
    let hpas = hpas_api.list(&every);
    let metrics = pod_metrics(cluster, &ns, &by_labels);
    let events_api = Api::<Event>::namespaced(cluster.client.clone(), &ns);
    let warning_events = ListParams::default().fields("type=Warning,involvedObject.kind=Pod");
    let warnings = events_api.list(&warning_events);
    let activity = super::changes::list(cluster, &ns);
    let (pods, sets, hpas, metrics, warnings, activity) =
        tokio::join!(pods, sets, hpas, metrics, warnings, activity);
    let mut pods = pods?;
    attach_warnings(cluster, warnings, &mut pods, &mut partial);

    // The placement does not wait for the Deployment and HPA reads.
    let owners = async {
        let mut partial = Partial::new();
        let deployment = deployment(cluster, &ns, sets, &pods, &mut partial).await;
        let hpa = hpa(cluster, &ns, hpas, deployment.as_ref(), &mut partial).await;
        (deployment, hpa, partial)
    };
    let ((deployment, hpa, owners_partial), (placement, placement_partial)) =
        tokio::join!(owners, super::placement::read(cluster, &pods));
    partial.extend(owners_partial);
    partial.extend(placement_partial);
    let activity = super::changes::activity(
        cluster,
        activity,
        hpa.as_ref().map(|h| h.name.as_str()),
        &mut partial,
    );
    let snapshot = snapshot(cluster, metrics, &mut partial);
    let (nodes, provisioning) = pending(cluster, &ns, &mut pods).await;
    Ok(Workload {
        cluster: cluster_name.or_else(|| target.cluster.clone()),
        service: service_ref,
        selector,
        pods,
        deployment,
        hpa,
        snapshot,
        nodes,
        provisioning,
        partial,
        activity,
        placement,
    })
}

/// Every TargetGroupBinding in the cluster, by target group ARN. Without the
/// controller's CRD (404) or the right to list it (403) the bindings are
/// unreadable, not an error: AWS's tags and names still point at a service.
pub async fn list_bindings(cluster: &Cluster) -> Result<TargetGroupBindings> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("elbv2.k8s.aws", "v1beta1", "TargetGroupBinding"),
        "targetgroupbindings",
    );
    match Api::<DynamicObject>::all_with(cluster.client.clone(), &resource)
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Ok(TargetGroupBindings {
            services: list
                .items
                .into_iter()
                .filter_map(|b| {
                    let arn = b.data["spec"]["targetGroupARN"].as_str()?.to_owned();
                    let service = ServiceRef {
                        namespace: b.metadata.namespace.clone().unwrap_or_default(),
                        name: b.data["spec"]["serviceRef"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        source: MappingSource::TargetGroupBinding,
                    };
                    Some((arn, service))
                })
                .collect(),
            unreadable: None,
        }),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 403 => {
            Ok(TargetGroupBindings {
                services: BTreeMap::new(),
                unreadable: Some(format!(
                    "{} {}: {}",
                    status.code, status.reason, status.message
                )),
            })
        }
        Err(e) => Err(cluster.explain(&e, "targetgroupbindings")),
    }
}

/// The Service's pod selector; a Service without one leads nowhere.
async fn service_selector(
    cluster: &Cluster,
    service_ref: &ServiceRef,
) -> Result<BTreeMap<String, String>> {
    let ns = &service_ref.namespace;
    let service = Api::<Service>::namespaced(cluster.client.clone(), ns)
        .get(&service_ref.name)
        .await
        .map_err(|e| cluster.explain(&e, &format!("service {ns}/{}", service_ref.name)))?;
    let selector: BTreeMap<String, String> =
        service.spec.and_then(|s| s.selector).unwrap_or_default();
    if selector.is_empty() {
        return Err(gap(
            format!(
                "service {ns}/{} has no selector: its pods cannot be found",
                service_ref.name
            ),
            false,
        ));
    }
    Ok(selector)
}

async fn list_pods(
    cluster: &Cluster,
    ns: &str,
    by_labels: &ListParams,
    labels: &str,
) -> Result<Vec<PodInfo>> {
    let list = Api::<Pod>::namespaced(cluster.client.clone(), ns)
        .list(by_labels)
        .await
        .map_err(|e| cluster.explain(&e, &format!("pods {labels} in {ns}")))?;
    let mut pods: Vec<PodInfo> = list.items.iter().map(pod_info).collect();
    pods.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pods)
}

async fn pod_metrics(
    cluster: &Cluster,
    ns: &str,
    by_labels: &ListParams,
) -> std::result::Result<ObjectList<DynamicObject>, kube::Error> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
        "pods",
    );
    Api::<DynamicObject>::namespaced_with(cluster.client.clone(), ns, &resource)
        .list(by_labels)
        .await
}

/// The owner of the pods' ReplicaSet; the newest ReplicaSet dates the last rollout.
async fn deployment(
    cluster: &Cluster,
    ns: &str,
    sets: std::result::Result<ObjectList<ReplicaSet>, kube::Error>,
    pods: &[PodInfo],
    partial: &mut Partial,
) -> Option<DeploymentInfo> {
    let sets = match sets {
        Ok(sets) => sets,
        Err(e) => {
            partial.push((
                "replicasets".to_owned(),
                cluster.explain(&e, "replicasets").to_string(),
            ));
            return None;
        }
    };
    let owner_of = |rs: &ReplicaSet| {
        rs.metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.iter().find(|o| o.kind == "Deployment"))
            .map(|o| o.name.clone())
    };
    let current = pods.iter().find_map(|p| p.owner_replica_set.clone());
    let name = sets
        .items
        .iter()
        .find(|rs| rs.metadata.name == current)
        .and_then(owner_of)
        .or_else(|| sets.items.iter().find_map(owner_of))?;
    let last_rollout = sets
        .items
        .iter()
        .filter(|rs| owner_of(rs).as_deref() == Some(name.as_str()))
        .filter_map(|rs| time_of(rs.metadata.creation_timestamp.as_ref()))
        .max();
    match Api::<Deployment>::namespaced(cluster.client.clone(), ns)
        .get(&name)
        .await
    {
        Ok(d) => {
            let spec = d.spec.as_ref();
            Some(DeploymentInfo {
                name: name.clone(),
                replicas: spec.and_then(|s| s.replicas),
                ready_replicas: d.status.as_ref().and_then(|s| s.ready_replicas),
                strategy: spec
                    .and_then(|s| s.strategy.as_ref())
                    .and_then(|s| s.type_.clone()),
                revision: d
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("deployment.kubernetes.io/revision").cloned()),
                last_rollout,
                revisions: super::changes::revisions(&sets.items, &name),
                conditions: d
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        condition(
                            &c.type_,
                            &c.status,
                            c.reason.as_ref(),
                            c.message.as_ref(),
                            c.last_transition_time.as_ref(),
                        )
                    })
                    .collect(),
                paused: spec.and_then(|s| s.paused).unwrap_or(false),
                scale_edit: super::timestamps::replicas_edit(d.metadata.managed_fields.as_ref()),
            })
        }
        Err(e) => {
            partial.push((
                format!("deployment {ns}/{name}"),
                cluster.explain(&e, "the deployment").to_string(),
            ));
            None
        }
    }
}

/// The HPA that scales the Deployment: autoscaling/v2 preferred, v1 understood.
async fn hpa(
    cluster: &Cluster,
    ns: &str,
    v2: std::result::Result<ObjectList<hpa_v2::HorizontalPodAutoscaler>, kube::Error>,
    deployment: Option<&DeploymentInfo>,
    partial: &mut Partial,
) -> Option<HpaInfo> {
    let scales =
        |kind: &str, name: &str| deployment.is_some_and(|d| kind == "Deployment" && name == d.name);
    let unreadable = |partial: &mut Partial, e: &kube::Error| {
        partial.push((
            "horizontalpodautoscalers".to_owned(),
            cluster.explain(e, "HPAs").to_string(),
        ));
        None
    };
    match v2 {
        Ok(list) => list
            .items
            .into_iter()
            .find(|h| {
                h.spec
                    .as_ref()
                    .is_some_and(|s| scales(&s.scale_target_ref.kind, &s.scale_target_ref.name))
            })
            .map(|h| hpa_from_v2(&h)),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            match Api::<hpa_v1::HorizontalPodAutoscaler>::namespaced(cluster.client.clone(), ns)
                .list(&ListParams::default())
                .await
            {
                Ok(list) => list
                    .items
                    .into_iter()
                    .find(|h| {
                        h.spec.as_ref().is_some_and(|s| {
                            scales(&s.scale_target_ref.kind, &s.scale_target_ref.name)
                        })
                    })
                    .map(|h| hpa_from_v1(&h)),
                Err(e) => unreadable(partial, &e),
            }
        }
        Err(e) => unreadable(partial, &e),
    }
}

/// The metrics.k8s.io snapshot (what `kubectl top` shows).
fn snapshot(
    cluster: &Cluster,
    metrics: std::result::Result<ObjectList<DynamicObject>, kube::Error>,
    partial: &mut Partial,
) -> Option<Vec<PodUsage>> {
    match metrics {
        Ok(list) => Some(
            list.items
                .iter()
                .map(|m| PodUsage {
                    pod: m.metadata.name.clone().unwrap_or_default(),
                    cpu_cores: sum_usage(&m.data, "cpu", cpu_cores),
                    memory_bytes: sum_usage(&m.data, "memory", bytes),
                })
                .collect(),
        ),
        Err(e) => {
            partial.push((
                "metrics.k8s.io pods".to_owned(),
                cluster.explain(&e, "PodMetrics").to_string(),
            ));
            None
        }
    }
}

/// Warning events (BackOff, Unhealthy, OOMKilling, ...) go to the pods they are about.
fn attach_warnings(
    cluster: &Cluster,
    events: std::result::Result<ObjectList<Event>, kube::Error>,
    pods: &mut [PodInfo],
    partial: &mut Partial,
) {
    let events = match events {
        Ok(list) => list.items,
        Err(e) => {
            partial.push((
                "pod warning events".to_owned(),
                cluster.explain(&e, "Events").to_string(),
            ));
            return;
        }
    };
    for event in events {
        let Some(pod) = pods
            .iter_mut()
            .find(|p| event.involved_object.name.as_deref() == Some(p.name.as_str()))
        else {
            continue;
        };
        pod.lifecycle.warnings.push(PodWarning {
            reason: event.reason.clone().unwrap_or_default(),
            message: event.message.clone().unwrap_or_default(),
            count: event.count.and_then(|c| u32::try_from(c).ok()).unwrap_or(1),
            last_seen: time_of(event.last_timestamp.as_ref())
                .or_else(|| time_of(event.first_timestamp.as_ref())),
        });
    }
}

/// Restarts and terminations, from the containers' statuses.
fn lifecycle_of(statuses: &[k8s_openapi::api::core::v1::ContainerStatus]) -> PodLifecycle {
    let running_since = statuses
        .iter()
        .filter_map(|c| time_of(c.state.as_ref()?.running.as_ref()?.started_at.as_ref()))
        .max();
    let last_termination = statuses
        .iter()
        .filter_map(|c| {
            let terminated = c.last_state.as_ref()?.terminated.as_ref()?;
            Some(Termination {
                container: c.name.clone(),
                reason: terminated
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("exit code {}", terminated.exit_code)),
                exit_code: terminated.exit_code,
                finished_at: time_of(terminated.finished_at.as_ref()),
            })
        })
        .max_by_key(|t| t.finished_at);
    let waiting_reason = statuses
        .iter()
        .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone());
    PodLifecycle {
        running_since,
        last_termination,
        waiting_reason,
        warnings: Vec::new(),
    }
}

/// Why pending pods do not schedule (their events), what the nodes have
/// left, and whether the cluster's autoscaler can add more.
async fn pending(
    cluster: &Cluster,
    ns: &str,
    pods: &mut [PodInfo],
) -> (Vec<NodeCapacity>, Option<NodeProvisioning>) {
    if !pods.iter().any(|p| p.phase == "Pending") {
        return (Vec::new(), None);
    }
    let events = Api::<Event>::namespaced(cluster.client.clone(), ns);
    // Each pending pod's events, all at once, beside the nodes' room.
    let reads = pods.iter().filter(|p| p.phase == "Pending").map(|pod| {
        let events = events.clone();
        let params = ListParams::default().fields(&format!("involvedObject.name={}", pod.name));
        let name = pod.name.clone();
        async move { (name, events.list(&params).await) }
    });
    let (messages, nodes, provisioning) = tokio::join!(
        futures_util::future::join_all(reads),
        node_capacity(&cluster.client),
        super::provisioning::read(cluster)
    );
    for (name, list) in messages {
        if let (Ok(list), Some(pod)) = (list, pods.iter_mut().find(|p| p.name == name)) {
            pod.scheduling_messages = list
                .items
                .iter()
                .filter_map(|e| e.message.clone())
                .collect();
        }
    }
    (nodes.unwrap_or_default(), Some(provisioning))
}

fn quantity(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    key: &str,
) -> Option<String> {
    map?.get(key).map(|q| q.0.clone())
}

fn pod_info(pod: &Pod) -> PodInfo {
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    PodInfo {
        name: pod.metadata.name.clone().unwrap_or_default(),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".to_owned()),
        node: spec.and_then(|s| s.node_name.clone()),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        restarts: status
            .and_then(|s| s.container_statuses.as_ref())
            .map_or(0, |c| {
                c.iter()
                    .map(|c| u32::try_from(c.restart_count).unwrap_or(0))
                    .sum()
            }),
        owner_replica_set: pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.iter().find(|o| o.kind == "ReplicaSet"))
            .map(|o| o.name.clone()),
        created: time_of(pod.metadata.creation_timestamp.as_ref()),
        ip: status.and_then(|s| s.pod_ip.clone()),
        reason: status.and_then(|s| s.reason.clone()),
        containers: spec
            .map(|s| {
                s.containers
                    .iter()
                    .map(|c| {
                        let resources = c.resources.as_ref();
                        ContainerInfo {
                            name: c.name.clone(),
                            cpu_request: quantity(
                                resources.and_then(|r| r.requests.as_ref()),
                                "cpu",
                            )
                            .and_then(|q| cpu_cores(&q)),
                            cpu_limit: quantity(resources.and_then(|r| r.limits.as_ref()), "cpu")
                                .and_then(|q| cpu_cores(&q)),
                            memory_limit: quantity(
                                resources.and_then(|r| r.limits.as_ref()),
                                "memory",
                            )
                            .and_then(|q| bytes(&q)),
                            readiness_probe: c.readiness_probe.is_some(),
                            liveness_probe: c.liveness_probe.is_some(),
                            args: c.args.clone().unwrap_or_default(),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default(),
        scheduling_messages: Vec::new(),
        lifecycle: status
            .and_then(|s| s.container_statuses.as_deref())
            .map(lifecycle_of)
            .unwrap_or_default(),
    }
}

fn selector_string(selector: &BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn sum_usage(data: &Value, resource: &str, parse: fn(&str) -> Option<f64>) -> f64 {
    data["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["usage"][resource].as_str().and_then(parse))
        .sum()
}

fn hpa_from_v2(h: &hpa_v2::HorizontalPodAutoscaler) -> HpaInfo {
    let spec = h.spec.as_ref();
    let status = h.status.as_ref();
    let mut target = None;
    let mut other = Vec::new();
    for metric in spec.and_then(|s| s.metrics.as_ref()).into_iter().flatten() {
        match metric.resource.as_ref() {
            Some(r) if r.name == "cpu" => target = r.target.average_utilization,
            Some(r) => other.push(format!("resource {}", r.name)),
            None => other.push(metric.type_.clone()),
        }
    }
    let current = status
        .and_then(|s| s.current_metrics.as_ref())
        .into_iter()
        .flatten()
        .find_map(|m| {
            m.resource
                .as_ref()
                .filter(|r| r.name == "cpu")
                .and_then(|r| r.current.average_utilization)
        });
    HpaInfo {
        name: h.metadata.name.clone().unwrap_or_default(),
        api_version: "autoscaling/v2".to_owned(),
        created_as_v1: h
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kubectl.kubernetes.io/last-applied-configuration"))
            .is_some_and(|c| c.contains("\"autoscaling/v1\"")),
        min_replicas: spec.and_then(|s| s.min_replicas),
        max_replicas: spec.map_or(0, |s| s.max_replicas),
        target_cpu_utilization: target,
        other_metrics: other,
        current_replicas: status.and_then(|s| s.current_replicas),
        desired_replicas: status.map(|s| s.desired_replicas),
        current_cpu_utilization: current,
        scale_down: spec
            .and_then(|s| s.behavior.as_ref())
            .and_then(|b| b.scale_down.as_ref())
            .map(|d| crate::evidence::workload::ScaleDownBehaviour {
                stabilization_window_seconds: d.stabilization_window_seconds,
                policies: d
                    .policies
                    .iter()
                    .flatten()
                    .map(|p| format!("{} {} per {} s", p.type_, p.value, p.period_seconds))
                    .collect(),
            }),
        spec_edit: super::timestamps::newest_edit(h.metadata.managed_fields.as_ref(), "f:spec"),
        conditions: status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| {
                condition(
                    &c.type_,
                    &c.status,
                    c.reason.as_ref(),
                    c.message.as_ref(),
                    c.last_transition_time.as_ref(),
                )
            })
            .collect(),
    }
}

fn hpa_from_v1(h: &hpa_v1::HorizontalPodAutoscaler) -> HpaInfo {
    let spec = h.spec.as_ref();
    let status = h.status.as_ref();
    HpaInfo {
        name: h.metadata.name.clone().unwrap_or_default(),
        api_version: "autoscaling/v1".to_owned(),
        created_as_v1: true,
        min_replicas: spec.and_then(|s| s.min_replicas),
        max_replicas: spec.map_or(0, |s| s.max_replicas),
        target_cpu_utilization: spec.and_then(|s| s.target_cpu_utilization_percentage),
        other_metrics: Vec::new(),
        current_replicas: status.map(|s| s.current_replicas),
        desired_replicas: status.map(|s| s.desired_replicas),
        current_cpu_utilization: status.and_then(|s| s.current_cpu_utilization_percentage),
        conditions: Vec::new(),
        scale_down: None,
        spec_edit: super::timestamps::newest_edit(h.metadata.managed_fields.as_ref(), "f:spec"),
    }
}

async fn node_capacity(
    client: &kube::Client,
) -> std::result::Result<Vec<NodeCapacity>, kube::Error> {
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default().fields("status.phase=Running"))
        .await?;
    Ok(nodes
        .items
        .iter()
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            let allocatable = quantity(
                n.status.as_ref().and_then(|s| s.allocatable.as_ref()),
                "cpu",
            )
            .and_then(|q| cpu_cores(&q))
            .unwrap_or(0.0);
            let requested = pods
                .items
                .iter()
                .filter(|p| {
                    p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str())
                })
                .map(|p| pod_info(p).cpu_request().unwrap_or(0.0))
                .sum();
            NodeCapacity {
                name,
                allocatable_cpu: allocatable,
                requested_cpu: requested,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests;
