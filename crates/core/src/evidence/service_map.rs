//! From a target group to the Kubernetes Service behind it, as far as AWS alone
//! can tell: the AWS Load Balancer Controller's tags first, its naming scheme
//! (`k8s-<namespace>-<service>-<hash>`, each part cut to 8 characters) as a
//! marked guess. The cluster's TargetGroupBindings settle it when readable.

use serde::{Deserialize, Serialize};

use crate::evidence::model::Tags;

/// Where a mapping came from, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MappingSource {
    TargetGroupBinding,
    Tags,
    /// Parsed from the target group's name; the controller truncates both parts.
    NameGuess,
}

/// A Kubernetes Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub source: MappingSource,
}

impl ServiceRef {
    /// `namespace/name`, with `?` after a guess.
    pub fn display(&self) -> String {
        match self.source {
            MappingSource::NameGuess => format!("{}/{}?", self.namespace, self.name),
            _ => format!("{}/{}", self.namespace, self.name),
        }
    }
}

/// The service from the controller's tags.
pub fn from_tags(tags: &Tags) -> Option<ServiceRef> {
    // Service-managed target groups (Service type LoadBalancer): "ns/name".
    if let Some((namespace, name)) = tags
        .get("service.k8s.aws/stack")
        .and_then(|s| s.split_once('/'))
    {
        return Some(ServiceRef {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source: MappingSource::Tags,
        });
    }
    // Ingress-managed: resource "ns/<ingress>-<service>:<port>", stack "ns/<ingress>".
    let resource = tags.get("ingress.k8s.aws/resource")?;
    let (namespace, rest) = resource.split_once('/')?;
    let without_port = rest.rsplit_once(':').map_or(rest, |(r, _)| r);
    let ingress = tags
        .get("ingress.k8s.aws/stack")
        .and_then(|s| s.split_once('/'))
        .map(|(_, ingress)| ingress);
    let name = match ingress {
        Some(ingress) => without_port.strip_prefix(ingress)?.strip_prefix('-')?,
        None => return None,
    };
    (!name.is_empty()).then(|| ServiceRef {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        source: MappingSource::Tags,
    })
}

/// A guess from a `k8s-<namespace>-<service>-<hash>` name.
pub fn from_name(target_group_name: &str) -> Option<ServiceRef> {
    let rest = target_group_name.strip_prefix("k8s-")?;
    let (head, hash) = rest.rsplit_once('-')?;
    if hash.len() != 10 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let (namespace, name) = head.split_once('-')?;
    (!namespace.is_empty() && !name.is_empty()).then(|| ServiceRef {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        source: MappingSource::NameGuess,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> Tags {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn ingress_tags_name_the_service() {
        let t = tags(&[
            ("ingress.k8s.aws/stack", "shop/shopfront"),
            ("ingress.k8s.aws/resource", "shop/shopfront-checkout:http"),
        ]);
        assert_eq!(
            from_tags(&t),
            Some(ServiceRef {
                namespace: "shop".into(),
                name: "checkout".into(),
                source: MappingSource::Tags
            })
        );
    }

    #[test]
    fn service_tags_name_the_service() {
        let t = tags(&[("service.k8s.aws/stack", "payments/api")]);
        assert_eq!(from_tags(&t).unwrap().display(), "payments/api");
    }

    #[test]
    fn an_ingress_group_without_namespace_in_the_stack_is_not_guessed_from_tags() {
        let t = tags(&[
            ("ingress.k8s.aws/stack", "shared-group"),
            ("ingress.k8s.aws/resource", "shop/web-checkout:80"),
        ]);
        assert_eq!(from_tags(&t), None);
    }

    #[test]
    fn controller_names_give_a_marked_guess() {
        let guess = from_name("k8s-shop-checkout-8a1f2c3d4e").unwrap();
        assert_eq!(guess.display(), "shop/checkout?");
        assert_eq!(from_name("my-own-target-group"), None);
        assert_eq!(from_name("k8s-shop-checkout-nothex!!!!"), None);
    }
}
