//! What changed around the workload, as the cluster records it: the
//! Deployment's ReplicaSets with their pod templates (environment variable
//! names, never values), the HPA's rescale events, Karpenter's and the
//! Cluster Autoscaler's events, and when the namespace's ConfigMaps were last
//! written (metadata only: no data, and Secrets are never read).

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Event, PodTemplateSpec, Probe};
use kube::Api;
use kube::api::{ListParams, ObjectList, PartialObjectMeta};

use super::connection::Cluster;
use super::timestamps::{newest_edit, time_of};
use crate::evidence::changes::{
    ClusterActivity, ClusterEvent, ConfigMapStamp, ContainerTemplate, NamespaceRollout,
    PodTemplate, ProbeTemplate, Revision,
};

type Listed<T> = std::result::Result<ObjectList<T>, kube::Error>;

/// Karpenter's or the autoscaler's events read at most (one page each).
const CAPACITY_EVENTS: u32 = 500;

/// The lists read alongside the pods, before anything is known of the workload.
#[derive(Debug)]
pub struct ActivityLists {
    hpa_events: Listed<Event>,
    karpenter: Listed<Event>,
    autoscaler: Listed<Event>,
    config_maps: Listed<PartialObjectMeta<ConfigMap>>,
    replica_sets: Listed<PartialObjectMeta<ReplicaSet>>,
}

/// Reads them concurrently: one round trip.
pub async fn list(cluster: &Cluster, ns: &str) -> ActivityLists {
    let events = Api::<Event>::namespaced(cluster.client.clone(), ns);
    let everywhere = Api::<Event>::all(cluster.client.clone());
    let hpa = ListParams::default().fields("involvedObject.kind=HorizontalPodAutoscaler");
    // Karpenter speaks of every pod it nominates: a busy cluster holds
    // thousands of its events within their hour. A bounded page is enough to
    // say that it acted and how.
    let karpenter = ListParams::default()
        .fields("source=karpenter")
        .limit(CAPACITY_EVENTS);
    let autoscaler = ListParams::default()
        .fields("source=cluster-autoscaler")
        .limit(CAPACITY_EVENTS);
    let config_maps = Api::<ConfigMap>::namespaced(cluster.client.clone(), ns);
    let replica_sets = Api::<ReplicaSet>::namespaced(cluster.client.clone(), ns);
    let every = ListParams::default();
    let (hpa_events, karpenter, autoscaler, config_maps, replica_sets) = tokio::join!(
        events.list(&hpa),
        everywhere.list(&karpenter),
        everywhere.list(&autoscaler),
        config_maps.list_metadata(&every),
        replica_sets.list_metadata(&every),
    );
    ActivityLists {
        hpa_events,
        karpenter,
        autoscaler,
        config_maps,
        replica_sets,
    }
}

/// The activity that concerns the workload: its HPA's events only.
pub fn activity(
    cluster: &Cluster,
    lists: ActivityLists,
    hpa: Option<&str>,
    partial: &mut Vec<(String, String)>,
) -> ClusterActivity {
    let mut activity = ClusterActivity::default();
    let mut unreadable = |what: &str, e: &kube::Error| {
        let reason = cluster.explain(e, what).to_string();
        partial.push((what.to_owned(), reason.clone()));
        activity_note(what, &reason)
    };
    let mut notes = Vec::new();
    match lists.hpa_events {
        Ok(list) => {
            activity.scaling = list
                .items
                .iter()
                .filter(|e| hpa.is_some() && e.involved_object.name.as_deref() == hpa)
                .map(|e| cluster_event(e, "horizontal-pod-autoscaler"))
                .collect();
        }
        Err(e) => notes.push(unreadable("HPA events", &e)),
    }
    for (component, list) in [
        ("karpenter", lists.karpenter),
        ("cluster-autoscaler", lists.autoscaler),
    ] {
        match list {
            Ok(list) => activity
                .capacity
                .extend(list.items.iter().map(|e| cluster_event(e, component))),
            Err(e) => notes.push(unreadable(&format!("{component} events"), &e)),
        }
    }
    match lists.config_maps {
        Ok(list) => {
            activity.config_maps = list
                .items
                .iter()
                .map(|c| ConfigMapStamp {
                    name: c.metadata.name.clone().unwrap_or_default(),
                    changed_at: c
                        .metadata
                        .managed_fields
                        .iter()
                        .flatten()
                        .filter_map(|f| time_of(f.time.as_ref()))
                        .max()
                        .or_else(|| time_of(c.metadata.creation_timestamp.as_ref())),
                    edit: newest_edit(c.metadata.managed_fields.as_ref(), "f:data"),
                })
                .collect();
        }
        Err(e) => notes.push(unreadable("configmaps (metadata)", &e)),
    }
    match lists.replica_sets {
        Ok(list) => activity.namespace_rollouts = newest_revisions(&list.items),
        Err(e) => notes.push(unreadable("replicasets (metadata)", &e)),
    }
    activity.unreadable = notes;
    activity
}

/// Each Deployment's newest ReplicaSet: when its last rollout began.
fn newest_revisions(sets: &[PartialObjectMeta<ReplicaSet>]) -> Vec<NamespaceRollout> {
    let mut newest: std::collections::BTreeMap<String, NamespaceRollout> = Default::default();
    for rs in sets {
        let meta = &rs.metadata;
        let Some(owner) = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "Deployment")
        else {
            continue;
        };
        let Some(at) = time_of(meta.creation_timestamp.as_ref()) else {
            continue;
        };
        let revision = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .and_then(|n| n.parse().ok());
        let candidate = NamespaceRollout {
            deployment: owner.name.clone(),
            revision,
            at,
        };
        let entry = newest
            .entry(owner.name.clone())
            .or_insert(candidate.clone());
        if (candidate.revision, candidate.at) > (entry.revision, entry.at) {
            *entry = candidate;
        }
    }
    newest.into_values().collect()
}

fn activity_note(what: &str, reason: &str) -> String {
    format!("{what}: {reason}")
}

fn cluster_event(e: &Event, component: &str) -> ClusterEvent {
    let object = &e.involved_object;
    let first = time_of(e.first_timestamp.as_ref())
        .or_else(|| time_of(e.event_time.as_ref()))
        .or_else(|| time_of(e.metadata.creation_timestamp.as_ref()));
    ClusterEvent {
        component: component.to_owned(),
        object: format!(
            "{}/{}",
            object.kind.as_deref().unwrap_or("?"),
            object.name.as_deref().unwrap_or("?")
        ),
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        count: e.count.and_then(|c| u32::try_from(c).ok()).unwrap_or(1),
        first_seen: first,
        last_seen: time_of(e.last_timestamp.as_ref()).or(first),
    }
}

/// The Deployment's ReplicaSets, newest revision first.
pub fn revisions(sets: &[ReplicaSet], deployment: &str) -> Vec<Revision> {
    let mut out: Vec<Revision> = sets
        .iter()
        .filter(|rs| {
            rs.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "Deployment" && o.name == deployment)
        })
        .map(|rs| {
            let annotation = |key: &str| {
                rs.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(key))
                    .cloned()
            };
            Revision {
                replica_set: rs.metadata.name.clone().unwrap_or_default(),
                number: annotation("deployment.kubernetes.io/revision")
                    .and_then(|n| n.parse().ok()),
                created: time_of(rs.metadata.creation_timestamp.as_ref()),
                desired_replicas: annotation("deployment.kubernetes.io/desired-replicas")
                    .and_then(|n| n.parse().ok()),
                replicas: rs.status.as_ref().map(|s| s.replicas),
                ready_replicas: rs.status.as_ref().and_then(|s| s.ready_replicas),
                template: rs
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .and_then(pod_template),
            }
        })
        .collect();
    out.sort_by(|a, b| b.number.cmp(&a.number).then(b.created.cmp(&a.created)));
    out
}

/// What changes behaviour in a pod template; `None` when it has no containers.
fn pod_template(spec: &PodTemplateSpec) -> Option<PodTemplate> {
    let pod = spec.spec.as_ref()?;
    let mut config_maps: Vec<String> = pod
        .volumes
        .iter()
        .flatten()
        .flat_map(|v| {
            let direct = v.config_map.as_ref().map(|c| c.name.clone());
            let projected = v
                .projected
                .iter()
                .flat_map(|p| p.sources.iter().flatten())
                .filter_map(|s| s.config_map.as_ref().map(|c| c.name.clone()))
                .collect::<Vec<_>>();
            direct.into_iter().chain(projected)
        })
        .collect();
    for container in &pod.containers {
        config_maps.extend(
            container
                .env_from
                .iter()
                .flatten()
                .filter_map(|e| e.config_map_ref.as_ref().map(|c| c.name.clone())),
        );
        config_maps.extend(container.env.iter().flatten().filter_map(|e| {
            Some(
                e.value_from
                    .as_ref()?
                    .config_map_key_ref
                    .as_ref()?
                    .name
                    .clone(),
            )
        }));
    }
    config_maps.sort();
    config_maps.dedup();
    let compact = |value: Option<serde_json::Value>| value.map(|v| v.to_string());
    Some(PodTemplate {
        containers: pod.containers.iter().map(container).collect(),
        node_selector: pod.node_selector.clone().unwrap_or_default(),
        affinity: compact(
            pod.affinity
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok()),
        ),
        tolerations: compact(
            pod.tolerations
                .as_ref()
                .and_then(|t| serde_json::to_value(t).ok()),
        ),
        config_maps,
        labels: spec
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k != "pod-template-hash")
            .collect(),
        annotations: spec
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .map(|a| a.iter().map(|(k, v)| (k.clone(), fingerprint(v))).collect())
            .unwrap_or_default(),
    })
}

/// Four hex digits of a value's hash: two revisions' values compare, and
/// nothing of the value (which may be a secret) can be read back from it.
fn fingerprint(value: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    format!("{:04x}", hasher.finish() & 0xffff)
}

fn container(c: &Container) -> ContainerTemplate {
    let resources = c.resources.as_ref();
    let quantity =
        |map: Option<
            &std::collections::BTreeMap<
                String,
                k8s_openapi::apimachinery::pkg::api::resource::Quantity,
            >,
        >,
         key: &str| { map.and_then(|m| m.get(key)).map(|q| q.0.clone()) };
    let requests = resources.and_then(|r| r.requests.as_ref());
    let limits = resources.and_then(|r| r.limits.as_ref());
    let mut env_names: Vec<String> = c.env.iter().flatten().map(|e| e.name.clone()).collect();
    env_names.sort();
    let env_fingerprints = c
        .env
        .iter()
        .flatten()
        .map(|e| {
            let source = match (&e.value, &e.value_from) {
                (Some(v), _) => fingerprint(v),
                (None, Some(from)) => fingerprint(&serde_json::to_string(from).unwrap_or_default()),
                (None, None) => fingerprint(""),
            };
            (e.name.clone(), source)
        })
        .collect();
    ContainerTemplate {
        name: c.name.clone(),
        image: c.image.clone(),
        command: c.command.clone().unwrap_or_default(),
        args: c.args.clone().unwrap_or_default(),
        env_names,
        env_fingerprints,
        cpu_request: quantity(requests, "cpu"),
        cpu_limit: quantity(limits, "cpu"),
        memory_request: quantity(requests, "memory"),
        memory_limit: quantity(limits, "memory"),
        readiness: c.readiness_probe.as_ref().map(probe),
        liveness: c.liveness_probe.as_ref().map(probe),
        startup: c.startup_probe.as_ref().map(probe),
        ports: c
            .ports
            .iter()
            .flatten()
            .map(|p| {
                format!(
                    "{}/{}",
                    p.container_port,
                    p.protocol.as_deref().unwrap_or("TCP")
                )
            })
            .collect(),
    }
}

fn probe(p: &Probe) -> ProbeTemplate {
    let port = |port: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString| match port {
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => n.to_string(),
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => s.clone(),
    };
    let action = if let Some(http) = &p.http_get {
        format!(
            "GET {} :{}",
            http.path.as_deref().unwrap_or("/"),
            port(&http.port)
        )
    } else if let Some(tcp) = &p.tcp_socket {
        format!("TCP :{}", port(&tcp.port))
    } else if let Some(grpc) = &p.grpc {
        format!("gRPC :{}", grpc.port)
    } else if p.exec.is_some() {
        // The command itself may carry credentials: only that it is one.
        "exec".to_owned()
    } else {
        "unknown".to_owned()
    };
    ProbeTemplate {
        action,
        initial_delay_seconds: p.initial_delay_seconds,
        period_seconds: p.period_seconds,
        timeout_seconds: p.timeout_seconds,
        failure_threshold: p.failure_threshold,
    }
}
