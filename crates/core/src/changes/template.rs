//! What a rollout changed: the difference between two revisions' pod
//! templates, field by field, in the words `kubectl rollout history` would
//! make you work out by hand.

use crate::evidence::changes::{ContainerTemplate, PodTemplate, ProbeTemplate, Revision};

use super::Aspect;

/// One field that differs between two revisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateDifference {
    pub aspect: Aspect,
    /// `image`, `cpu limit`, `readiness probe`; prefixed with the container
    /// when the pod has several.
    pub field: String,
    pub before: String,
    pub after: String,
}

impl TemplateDifference {
    /// `cpu limit 2 -> 500m`.
    pub fn describe(&self) -> String {
        format!("{} {} -> {}", self.field, self.before, self.after)
    }

    /// A limit brought down (a CPU or memory limit, the replicas): it acts
    /// when demand reaches it, however long after the rollout.
    pub fn lowers_a_limit(&self) -> bool {
        use crate::evidence::workload::{bytes, cpu_cores};
        let amount = |text: &str| match self.aspect {
            Aspect::CpuLimit => cpu_cores(text),
            Aspect::Memory if self.field.ends_with("memory limit") => bytes(text),
            Aspect::Replicas => text.parse::<f64>().ok(),
            _ => None,
        };
        matches!((amount(&self.before), amount(&self.after)), (Some(b), Some(a)) if a < b)
    }
}

/// The differences from `before` to `after`, in a stable order (image and
/// command first, then resources, probes, ports, scheduling, replicas).
pub fn diff(before: &Revision, after: &Revision) -> Option<Vec<TemplateDifference>> {
    let (old, new) = (before.template.as_ref()?, after.template.as_ref()?);
    let mut out = Vec::new();
    let several = new.containers.len() > 1 || old.containers.len() > 1;
    for container in &new.containers {
        let prefix = if several {
            format!("{}: ", container.name)
        } else {
            String::new()
        };
        match old.containers.iter().find(|c| c.name == container.name) {
            Some(previous) => containers(previous, container, &prefix, &mut out),
            None => out.push(TemplateDifference {
                aspect: Aspect::Image,
                field: format!("container {}", container.name),
                before: "absent".to_owned(),
                after: "added".to_owned(),
            }),
        }
    }
    for container in &old.containers {
        if !new.containers.iter().any(|c| c.name == container.name) {
            out.push(TemplateDifference {
                aspect: Aspect::Image,
                field: format!("container {}", container.name),
                before: "present".to_owned(),
                after: "removed".to_owned(),
            });
        }
    }
    scheduling(old, new, &mut out);
    metadata(old, new, &mut out);
    // A ReplicaSet scaled away keeps 0 as its desired replicas: that is the
    // rollout moving pods, not a change of how many the Deployment wants.
    let wanted = |r: &Revision| r.desired_replicas.filter(|n| *n > 0);
    if wanted(before) != wanted(after) && wanted(before).is_some() && wanted(after).is_some() {
        out.push(TemplateDifference {
            aspect: Aspect::Replicas,
            field: "replicas".to_owned(),
            before: shown(&before.desired_replicas),
            after: shown(&after.desired_replicas),
        });
    }
    Some(out)
}

fn containers(
    old: &ContainerTemplate,
    new: &ContainerTemplate,
    prefix: &str,
    out: &mut Vec<TemplateDifference>,
) {
    let mut push = |aspect: Aspect, field: &str, before: String, after: String| {
        if before != after {
            out.push(TemplateDifference {
                aspect,
                field: format!("{prefix}{field}"),
                before,
                after,
            });
        }
    };
    let (before, after) = image_tags(old.image.as_deref(), new.image.as_deref());
    push(Aspect::Image, "image", before, after);
    push(
        Aspect::Command,
        "command",
        words(&old.command),
        words(&new.command),
    );
    push(Aspect::Command, "args", words(&old.args), words(&new.args));
    let added: Vec<&String> = new
        .env_names
        .iter()
        .filter(|n| !old.env_names.contains(n))
        .collect();
    let removed: Vec<&String> = old
        .env_names
        .iter()
        .filter(|n| !new.env_names.contains(n))
        .collect();
    if !added.is_empty() || !removed.is_empty() {
        push(
            Aspect::Environment,
            "env",
            names(&removed, "removed"),
            names(&added, "added"),
        );
    }
    // A value that changed under the same name: the fingerprints differ.
    let changed: Vec<&String> = new
        .env_fingerprints
        .iter()
        .filter(|(name, print)| {
            old.env_fingerprints
                .get(*name)
                .is_some_and(|before| before != *print)
        })
        .map(|(name, _)| name)
        .collect();
    if !changed.is_empty() {
        let list = changed
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        push(
            Aspect::Environment,
            &format!("env {list}"),
            "a value".to_owned(),
            "another".to_owned(),
        );
    }
    push(
        Aspect::CpuLimit,
        "cpu limit",
        shown(&old.cpu_limit),
        shown(&new.cpu_limit),
    );
    push(
        Aspect::CpuRequest,
        "cpu request",
        shown(&old.cpu_request),
        shown(&new.cpu_request),
    );
    push(
        Aspect::Memory,
        "memory limit",
        shown(&old.memory_limit),
        shown(&new.memory_limit),
    );
    push(
        Aspect::Memory,
        "memory request",
        shown(&old.memory_request),
        shown(&new.memory_request),
    );
    for (field, before, after) in [
        ("readiness probe", &old.readiness, &new.readiness),
        ("liveness probe", &old.liveness, &new.liveness),
        ("startup probe", &old.startup, &new.startup),
    ] {
        probe(field, before.as_ref(), after.as_ref(), &mut push);
    }
    push(Aspect::Ports, "ports", words(&old.ports), words(&new.ports));
}

/// A probe's change, field by field (`readiness probe timeout 5 s -> 1 s`).
fn probe(
    field: &str,
    old: Option<&ProbeTemplate>,
    new: Option<&ProbeTemplate>,
    push: &mut impl FnMut(Aspect, &str, String, String),
) {
    match (old, new) {
        (None, None) => {}
        (Some(o), Some(n)) => {
            push(Aspect::Probes, field, o.action.clone(), n.action.clone());
            for (name, before, after) in [
                (
                    "initial delay",
                    o.initial_delay_seconds,
                    n.initial_delay_seconds,
                ),
                ("period", o.period_seconds, n.period_seconds),
                ("timeout", o.timeout_seconds, n.timeout_seconds),
            ] {
                push(
                    Aspect::Probes,
                    &format!("{field} {name}"),
                    seconds(before),
                    seconds(after),
                );
            }
            push(
                Aspect::Probes,
                &format!("{field} failure threshold"),
                shown(&o.failure_threshold),
                shown(&n.failure_threshold),
            );
        }
        (o, n) => push(
            Aspect::Probes,
            field,
            o.map_or_else(|| "none".to_owned(), |p| p.action.clone()),
            n.map_or_else(|| "none".to_owned(), |p| p.action.clone()),
        ),
    }
}

/// Labels and annotations: most cannot change how a pod runs. A config
/// checksum annotation (Helm's `checksum/config`) stands for the config the
/// pods restart onto; `kubectl rollout restart`'s stamp is the restart itself,
/// which an empty difference already says.
fn metadata(old: &PodTemplate, new: &PodTemplate, out: &mut Vec<TemplateDifference>) {
    let keys = |a: &std::collections::BTreeMap<String, String>,
                b: &std::collections::BTreeMap<String, String>| {
        let mut keys: Vec<String> = a.keys().chain(b.keys()).cloned().collect();
        keys.sort();
        keys.dedup();
        keys
    };
    let missing = || "none".to_owned();
    for key in keys(&old.labels, &new.labels) {
        let (before, after) = (old.labels.get(&key), new.labels.get(&key));
        if before != after {
            out.push(TemplateDifference {
                aspect: Aspect::Metadata,
                field: format!("label {key}"),
                before: before.cloned().unwrap_or_else(missing),
                after: after.cloned().unwrap_or_else(missing),
            });
        }
    }
    for key in keys(&old.annotations, &new.annotations) {
        let (before, after) = (old.annotations.get(&key), new.annotations.get(&key));
        if before == after || key.ends_with("/restartedAt") {
            continue;
        }
        let shown = |v: Option<&String>| if v.is_some() { "set" } else { "none" }.to_owned();
        out.push(TemplateDifference {
            aspect: if key.contains("checksum") {
                Aspect::Config
            } else {
                Aspect::Metadata
            },
            field: format!("annotation {key}"),
            before: shown(before),
            after: if before.is_some() && after.is_some() {
                "changed".to_owned()
            } else {
                shown(after)
            },
        });
    }
}

fn scheduling(old: &PodTemplate, new: &PodTemplate, out: &mut Vec<TemplateDifference>) {
    let selector = |t: &PodTemplate| {
        t.node_selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    for (field, before, after) in [
        ("node selector", selector(old), selector(new)),
        (
            "affinity",
            old.affinity.clone().unwrap_or_default(),
            new.affinity.clone().unwrap_or_default(),
        ),
        (
            "tolerations",
            old.tolerations.clone().unwrap_or_default(),
            new.tolerations.clone().unwrap_or_default(),
        ),
    ] {
        if before != after {
            out.push(TemplateDifference {
                aspect: Aspect::Scheduling,
                field: field.to_owned(),
                // Affinity terms are long: say that they changed, not how.
                before: if field == "node selector" {
                    or_none(before)
                } else {
                    "(previous)".to_owned()
                },
                after: if field == "node selector" {
                    or_none(after)
                } else {
                    "(changed)".to_owned()
                },
            });
        }
    }
}

/// Two image references, shortened to their tags when only the tag moved.
fn image_tags(old: Option<&str>, new: Option<&str>) -> (String, String) {
    match (old, new) {
        (Some(o), Some(n)) if o == n => (o.to_owned(), n.to_owned()),
        (Some(o), Some(n)) => {
            let split = |image: &str| match image.rsplit_once(':') {
                Some((repo, tag)) if !tag.contains('/') => (repo.to_owned(), tag.to_owned()),
                _ => (image.to_owned(), String::new()),
            };
            let ((old_repo, old_tag), (new_repo, new_tag)) = (split(o), split(n));
            if old_repo == new_repo && !old_tag.is_empty() && !new_tag.is_empty() {
                let name = new_repo.rsplit('/').next().unwrap_or(&new_repo);
                (format!("{name}:{old_tag}"), new_tag)
            } else {
                (o.to_owned(), n.to_owned())
            }
        }
        (o, n) => (
            o.unwrap_or("none").to_owned(),
            n.unwrap_or("none").to_owned(),
        ),
    }
}

fn words(parts: &[String]) -> String {
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(" ")
    }
}

fn names(names: &[&String], what: &str) -> String {
    if names.is_empty() {
        format!("none {what}")
    } else {
        format!(
            "{} {what}",
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

fn shown<T: ToString>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "none".to_owned(), ToString::to_string)
}

fn seconds(value: Option<i32>) -> String {
    value.map_or_else(|| "default".to_owned(), |s| format!("{s} s"))
}

fn or_none(text: String) -> String {
    if text.is_empty() {
        "none".to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(number: u64, change: impl FnOnce(&mut ContainerTemplate)) -> Revision {
        let mut container = ContainerTemplate {
            name: "ledger".into(),
            image: Some("123.dkr.ecr.eu-west-1.amazonaws.com/ledger:2.3.0".into()),
            cpu_request: Some("500m".into()),
            cpu_limit: Some("2".into()),
            env_names: vec!["DATABASE_URL".into(), "LOG_LEVEL".into()],
            liveness: Some(ProbeTemplate {
                action: "GET /livez :8080".into(),
                timeout_seconds: Some(5),
                ..ProbeTemplate::default()
            }),
            ..ContainerTemplate::default()
        };
        change(&mut container);
        Revision {
            replica_set: format!("ledger-{number}"),
            number: Some(number),
            created: None,
            desired_replicas: Some(4),
            replicas: None,
            ready_replicas: None,
            template: Some(PodTemplate {
                containers: vec![container],
                ..PodTemplate::default()
            }),
        }
    }

    #[test]
    fn a_rollout_that_only_lowers_the_cpu_limit_says_exactly_that() {
        let before = revision(17, |_| {});
        let after = revision(18, |c| c.cpu_limit = Some("500m".into()));
        let differences = diff(&before, &after).unwrap();
        assert_eq!(differences.len(), 1);
        assert_eq!(differences[0].aspect, Aspect::CpuLimit);
        assert_eq!(differences[0].describe(), "cpu limit 2 -> 500m");
    }

    #[test]
    fn an_image_bump_is_shown_as_its_tags_and_probe_fields_one_by_one() {
        let before = revision(17, |_| {});
        let after = revision(18, |c| {
            c.image = Some("123.dkr.ecr.eu-west-1.amazonaws.com/ledger:2.4.0".into());
            if let Some(p) = c.liveness.as_mut() {
                p.timeout_seconds = Some(1);
            }
        });
        let described: Vec<String> = diff(&before, &after)
            .unwrap()
            .iter()
            .map(TemplateDifference::describe)
            .collect();
        assert_eq!(
            described,
            [
                "image ledger:2.3.0 -> 2.4.0",
                "liveness probe timeout 5 s -> 1 s"
            ]
        );
    }

    #[test]
    fn a_value_changed_under_the_same_name_is_named_without_its_value() {
        let before = revision(17, |c| {
            c.env_fingerprints = [("LOG_FORMAT".to_owned(), "1a2b".to_owned())].into();
        });
        let after = revision(18, |c| {
            c.env_fingerprints = [("LOG_FORMAT".to_owned(), "9f00".to_owned())].into();
        });
        let differences = diff(&before, &after).unwrap();
        assert_eq!(differences.len(), 1);
        assert_eq!(differences[0].aspect, Aspect::Environment);
        assert_eq!(
            differences[0].describe(),
            "env LOG_FORMAT a value -> another"
        );
    }

    #[test]
    fn labels_and_plain_annotations_are_metadata_and_a_config_checksum_is_config() {
        let with = |labels: &[(&str, &str)], annotations: &[(&str, &str)]| {
            let mut r = revision(17, |_| {});
            let t = r.template.as_mut().unwrap();
            t.labels = labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            t.annotations = annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            r
        };
        let before = with(
            &[("team", "a")],
            &[("checksum/config", "01"), ("owner", "x")],
        );
        let after = with(
            &[("team", "b")],
            &[("checksum/config", "02"), ("owner", "y")],
        );
        let aspects: Vec<Aspect> = diff(&before, &after)
            .unwrap()
            .iter()
            .map(|d| d.aspect)
            .collect();
        assert_eq!(
            aspects,
            [Aspect::Metadata, Aspect::Config, Aspect::Metadata]
        );
        let restarted = with(&[], &[("kubectl.kubernetes.io/restartedAt", "t2")]);
        assert!(diff(&with(&[], &[]), &restarted).unwrap().is_empty());
    }

    #[test]
    fn environment_changes_name_the_variables_never_their_values() {
        let before = revision(17, |_| {});
        let after = revision(18, |c| {
            c.env_names = vec!["DATABASE_URL".into(), "POOL_SIZE".into()];
        });
        let described = diff(&before, &after).unwrap()[0].describe();
        assert_eq!(described, "env LOG_LEVEL removed -> POOL_SIZE added");
    }

    #[test]
    fn revisions_read_without_templates_cannot_be_compared() {
        let mut before = revision(17, |_| {});
        before.template = None;
        assert!(diff(&before, &revision(18, |_| {})).is_none());
    }
}
