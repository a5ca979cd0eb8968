//! Kubernetes timestamps (`Time`, `MicroTime`) as chrono times, through
//! their RFC 3339 serialisation: the walk and the change reads share them.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Any Kubernetes timestamp type that serialises to RFC 3339.
pub(super) fn time_of<T: Serialize>(t: Option<&T>) -> Option<DateTime<Utc>> {
    let text = serde_json::to_value(t?).ok()?;
    DateTime::parse_from_rfc3339(text.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The newest write by a person or tool to `section` (`f:spec`, `f:data`) of
/// an object, from its `managedFields`: status writes (the controllers
/// keeping `status` current) are not edits. Only field names are read.
pub(super) fn newest_edit(
    managed: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry>>,
    section: &str,
) -> Option<crate::evidence::changes::FieldEdit> {
    managed
        .into_iter()
        .flatten()
        .filter(|f| f.subresource.as_deref() != Some("status"))
        .filter_map(|f| {
            let touched = f.fields_v1.as_ref()?.0.get(section)?.as_object()?;
            let fields: Vec<String> = touched
                .keys()
                .filter_map(|k| k.strip_prefix("f:"))
                .map(str::to_owned)
                .collect();
            Some(crate::evidence::changes::FieldEdit {
                at: time_of(f.time.as_ref())?,
                fields,
                manager: f.manager.clone(),
            })
        })
        .max_by_key(|e| e.at)
}

/// The newest write of `spec.replicas` alone by a person or a tool: `kubectl
/// scale` (the scale subresource) or an edit of that one field. The HPA's
/// writes (the controller manager's) are its own scaling, read elsewhere.
pub(super) fn replicas_edit(
    managed: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry>>,
) -> Option<crate::evidence::changes::FieldEdit> {
    managed
        .into_iter()
        .flatten()
        .filter(|f| f.subresource.as_deref() != Some("status"))
        .filter(|f| {
            !f.manager.as_deref().is_some_and(|m| {
                m.contains("controller-manager") || m.contains("horizontal-pod-autoscaler")
            })
        })
        .filter_map(|f| {
            let spec = f.fields_v1.as_ref()?.0.get("f:spec")?.as_object()?;
            let only_replicas = spec.len() == 1 && spec.contains_key("f:replicas");
            let scale =
                f.subresource.as_deref() == Some("scale") && spec.contains_key("f:replicas");
            (only_replicas || scale).then_some(())?;
            Some(crate::evidence::changes::FieldEdit {
                at: time_of(f.time.as_ref())?,
                fields: vec!["replicas".to_owned()],
                manager: f.manager.clone(),
            })
        })
        .max_by_key(|e| e.at)
}

/// A condition as its controller wrote it (HPA, Deployment, Node share the
/// shape, not the type).
pub(super) fn condition(
    kind: &str,
    status: &str,
    reason: Option<&String>,
    message: Option<&String>,
    since: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> crate::evidence::workload::Condition {
    crate::evidence::workload::Condition {
        kind: kind.to_owned(),
        status: status.to_owned(),
        reason: reason.cloned(),
        message: message.cloned(),
        since: time_of(since),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    fn entry(
        manager: &str,
        subresource: Option<&str>,
        fields: serde_json::Value,
        time: &str,
    ) -> ManagedFieldsEntry {
        serde_json::from_value(serde_json::json!({
            "manager": manager, "operation": "Update", "subresource": subresource,
            "apiVersion": "apps/v1", "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields
        }))
        .unwrap()
    }

    #[test]
    fn a_kubectl_scale_is_a_replicas_edit_and_the_hpas_writes_are_not() {
        let managed = vec![
            entry(
                "helm",
                None,
                serde_json::json!({"f:spec": {"f:replicas": {}, "f:template": {}}}),
                "2026-12-03T10:00:00Z",
            ),
            entry(
                "kubectl",
                Some("scale"),
                serde_json::json!({"f:spec": {"f:replicas": {}}}),
                "2026-12-03T13:28:00Z",
            ),
            entry(
                "kube-controller-manager",
                Some("scale"),
                serde_json::json!({"f:spec": {"f:replicas": {}}}),
                "2026-12-03T13:50:00Z",
            ),
        ];
        let edit = replicas_edit(Some(&managed)).expect("kubectl's write");
        assert_eq!(edit.manager.as_deref(), Some("kubectl"));
        assert_eq!(edit.at.to_rfc3339(), "2026-12-03T13:28:00+00:00");
        // A rollout's write of the whole spec is not a scale edit.
        assert_eq!(replicas_edit(Some(&managed[..1].to_vec())), None);
    }
}
