//! Audit records (CloudTrail) turned into changes: which calls change the
//! request path, what each one changed in a reader's words, and who made it.
//! Only the request parameters that matter are read; anything else in a
//! record (certificates, tags, free text) never reaches the report.

use serde_json::Value;

use super::{Aspect, Change, ChangeKind, ChangeOrigin};
use crate::evidence::changes::{RequestPath, TrailEvent};

/// The change a record describes, when it writes to a resource of `path`.
pub fn interpret(event: &TrailEvent, path: &RequestPath) -> Option<Change> {
    let record: Value = event
        .record
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    if read_only(event, &record) {
        return None;
    }
    let request = &record["requestParameters"];
    let (kind, subject, summary, aspects) = match event.source.as_str() {
        "elasticloadbalancing.amazonaws.com" => load_balancing(event, request, path)?,
        "ec2.amazonaws.com" => security_group(event, request, path)?,
        "eks.amazonaws.com" => node_group(event, request, path)?,
        _ => return None,
    };
    let identity = Identity::of(&record, event);
    let mut details = Vec::new();
    if let Some(by) = &identity.principal {
        details.push(match &identity.tool {
            Some(tool) => format!("by {by} ({tool})"),
            None => format!("by {by}"),
        });
    }
    Some(Change {
        kind,
        at: event.at,
        source: ChangeOrigin::CloudTrail,
        subject,
        summary,
        details,
        by: identity.principal.clone(),
        event: Some(event.name.clone()),
        automatic: identity.automatic || automatic_registration(kind, &identity),
        aspects,
        offset_seconds: None,
        most_plausible: false,
        elsewhere: false,
        lowered: Vec::new(),
    })
}

type Interpreted = (ChangeKind, String, String, Vec<Aspect>);

fn read_only(event: &TrailEvent, record: &Value) -> bool {
    if let Some(flag) = record["readOnly"].as_bool() {
        return flag;
    }
    ["Describe", "List", "Get", "Lookup"]
        .iter()
        .any(|prefix| event.name.starts_with(prefix))
}

/// Every string in the record's resources and request, for matching ARNs and ids.
fn mentions(event: &TrailEvent, request: &Value, needle: &str) -> bool {
    !needle.is_empty()
        && (event
            .resources
            .iter()
            .any(|(_, name)| name.contains(needle))
            || request.to_string().contains(needle))
}

fn load_balancing(event: &TrailEvent, request: &Value, path: &RequestPath) -> Option<Interpreted> {
    let group = path
        .target_groups
        .iter()
        .find(|(arn, _)| mentions(event, request, arn));
    let balancer = path
        .load_balancer_arn
        .as_deref()
        .is_some_and(|arn| mentions(event, request, arn));
    // Listeners and rules carry `app/<name>/<id>` in their ARNs.
    let listener = path
        .load_balancer_dimension
        .as_deref()
        .is_some_and(|d| mentions(event, request, &format!("/{d}/")));
    let name = event.name.as_str();
    let lb = path
        .load_balancer_dimension
        .as_deref()
        .and_then(crate::evidence::model::load_balancer_name)
        .unwrap_or("the load balancer");
    match name {
        "ModifyTargetGroup" | "ModifyTargetGroupAttributes" | "CreateTargetGroup" => {
            let (_, group) = group?;
            let (summary, aspects) = if name == "ModifyTargetGroupAttributes" {
                (attributes(request), vec![Aspect::TargetGroupAttributes])
            } else {
                health_check(request)
            };
            Some((
                ChangeKind::TargetGroup,
                format!("target group {group}"),
                summary,
                aspects,
            ))
        }
        "RegisterTargets" | "DeregisterTargets" => {
            let (_, group) = group?;
            let targets = request["targets"].as_array().map_or(0, Vec::len);
            let verb = if name == "RegisterTargets" {
                "registered"
            } else {
                "deregistered"
            };
            Some((
                ChangeKind::Targets,
                format!("target group {group}"),
                format!(
                    "{targets} target{} {verb}{}",
                    if targets == 1 { "" } else { "s" },
                    target_ids(request)
                ),
                vec![Aspect::TargetMembership],
            ))
        }
        "ModifyListener"
        | "CreateListener"
        | "DeleteListener"
        | "ModifyListenerAttributes"
        | "CreateRule"
        | "ModifyRule"
        | "DeleteRule"
        | "SetRulePriorities" => {
            if !(listener || balancer || group.is_some()) {
                return None;
            }
            Some((
                ChangeKind::Listener,
                format!("listener of {lb}"),
                routing(name, request, path),
                vec![Aspect::Routing],
            ))
        }
        "ModifyLoadBalancerAttributes"
        | "SetSecurityGroups"
        | "SetSubnets"
        | "SetIpAddressType"
        | "DeleteLoadBalancer" => {
            if !balancer {
                return None;
            }
            let (summary, aspect) = match name {
                "ModifyLoadBalancerAttributes" => {
                    (attributes(request), Aspect::LoadBalancerAttributes)
                }
                "SetSecurityGroups" => (
                    format!(
                        "security groups set to {}",
                        strings(&request["securityGroups"]).join(", ")
                    ),
                    Aspect::Network,
                ),
                "SetSubnets" => ("subnets changed".to_owned(), Aspect::Network),
                other => (sentence(other), Aspect::LoadBalancerAttributes),
            };
            Some((
                ChangeKind::LoadBalancer,
                format!("load balancer {lb}"),
                summary,
                vec![aspect],
            ))
        }
        _ => None,
    }
}

/// `health-check path -> /health, health-check timeout -> 2 s`.
fn health_check(request: &Value) -> (String, Vec<Aspect>) {
    const FIELDS: [(&str, &str, &str); 8] = [
        ("healthCheckPath", "health-check path", ""),
        ("healthCheckPort", "health-check port", ""),
        ("healthCheckProtocol", "health-check protocol", ""),
        ("healthCheckTimeoutSeconds", "health-check timeout", " s"),
        ("healthCheckIntervalSeconds", "health-check interval", " s"),
        ("healthyThresholdCount", "healthy threshold", ""),
        ("unhealthyThresholdCount", "unhealthy threshold", ""),
        ("healthCheckEnabled", "health checks enabled", ""),
    ];
    let mut parts: Vec<String> = FIELDS
        .iter()
        .filter_map(|(key, label, unit)| {
            let value = scalar(&request[*key])?;
            Some(format!("{label} -> {value}{unit}"))
        })
        .collect();
    if let Some(codes) = scalar(&request["matcher"]["httpCode"]) {
        parts.push(format!("success codes -> {codes}"));
    }
    if parts.is_empty() {
        ("settings changed".to_owned(), vec![Aspect::HealthCheck])
    } else {
        (parts.join(", "), vec![Aspect::HealthCheck])
    }
}

/// `deregistration_delay.timeout_seconds = 30`.
fn attributes(request: &Value) -> String {
    let pairs: Vec<String> = request["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| Some(format!("{} = {}", a["key"].as_str()?, scalar(&a["value"])?)))
        .collect();
    if pairs.is_empty() {
        "attributes changed".to_owned()
    } else {
        pairs.join(", ")
    }
}

/// `rule modified (/cart*): forward to k8s-shop-cart-... 50 %, k8s-shop-canary-... 50 %`:
/// where the traffic goes after the change is what moves a target group's load.
fn routing(name: &str, request: &Value, path: &RequestPath) -> String {
    let patterns: Vec<String> = request["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| {
            let mut values = strings(&c["values"]);
            values.extend(strings(&c["pathPatternConfig"]["values"]));
            values.extend(strings(&c["hostHeaderConfig"]["values"]));
            values
        })
        .collect();
    let what = sentence(name);
    let what = if patterns.is_empty() {
        what
    } else {
        format!("{what} ({})", patterns.join(", "))
    };
    match forwards(request, path) {
        Some(to) => format!("{what}: forward to {to}"),
        None => what,
    }
}

/// The target groups a listener's or rule's forward actions send to, with
/// their share of the traffic when the forward is weighted.
fn forwards(request: &Value, path: &RequestPath) -> Option<String> {
    let name = |arn: &str| {
        path.target_groups
            .get(arn)
            .cloned()
            .unwrap_or_else(|| arn.rsplit('/').nth(1).unwrap_or(arn).to_owned())
    };
    let actions = ["defaultActions", "actions"]
        .iter()
        .flat_map(|key| request[*key].as_array().into_iter().flatten());
    let mut parts = Vec::new();
    for action in actions {
        let weighted: Vec<(String, f64)> = action["forwardConfig"]["targetGroups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| {
                let weight = g["weight"].as_f64().unwrap_or(1.0).max(0.0);
                Some((name(g["targetGroupArn"].as_str()?), weight))
            })
            .collect();
        let total: f64 = weighted.iter().map(|(_, w)| w).sum();
        if weighted.len() > 1 && total > 0.0 {
            parts.extend(
                weighted
                    .iter()
                    .map(|(g, w)| format!("{g} {:.0} %", 100.0 * w / total)),
            );
        } else if let Some((g, _)) = weighted.first() {
            parts.push(g.clone());
        } else if let Some(arn) = action["targetGroupArn"].as_str() {
            parts.push(name(arn));
        }
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `RevokeSecurityGroupIngress` on a group the load balancer uses, or on
/// any group whose rule named one of them (the nodes' group letting the
/// load balancer in).
fn security_group(event: &TrailEvent, request: &Value, path: &RequestPath) -> Option<Interpreted> {
    const CHANGES: [&str; 6] = [
        "AuthorizeSecurityGroupIngress",
        "RevokeSecurityGroupIngress",
        "AuthorizeSecurityGroupEgress",
        "RevokeSecurityGroupEgress",
        "ModifySecurityGroupRules",
        "DeleteSecurityGroup",
    ];
    if !CHANGES.contains(&event.name.as_str()) {
        return None;
    }
    if !path
        .security_groups
        .iter()
        .any(|sg| mentions(event, request, sg))
    {
        return None;
    }
    let group = request["groupId"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| event.resources.first().map(|(_, name)| name.clone()))
        .unwrap_or_else(|| "a security group".to_owned());
    let rules: Vec<String> = request["ipPermissions"]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p["ipProtocol"].as_str().unwrap_or("all");
            let ports = match (scalar(&p["fromPort"]), scalar(&p["toPort"])) {
                (Some(from), Some(to)) if from == to => format!(" {from}"),
                (Some(from), Some(to)) => format!(" {from}-{to}"),
                _ => String::new(),
            };
            let mut peers: Vec<String> = p["groups"]["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g["groupId"].as_str().map(str::to_owned))
                .collect();
            peers.extend(
                p["ipRanges"]["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["cidrIp"].as_str().map(str::to_owned)),
            );
            let peers = if peers.is_empty() {
                String::new()
            } else {
                format!(" from {}", peers.join(", "))
            };
            format!("{protocol}{ports}{peers}")
        })
        .collect();
    let verb = match event.name.as_str() {
        "RevokeSecurityGroupIngress" => "ingress rule revoked",
        "AuthorizeSecurityGroupIngress" => "ingress rule added",
        "RevokeSecurityGroupEgress" => "egress rule revoked",
        "AuthorizeSecurityGroupEgress" => "egress rule added",
        "DeleteSecurityGroup" => "deleted",
        _ => "rules modified",
    };
    let summary = if rules.is_empty() {
        verb.to_owned()
    } else {
        format!("{verb}: {}", rules.join("; "))
    };
    // A rule added lets more traffic in or out; it cannot block any.
    let aspect = if event.name.starts_with("Authorize") {
        Aspect::NetworkAllowed
    } else {
        Aspect::Network
    };
    Some((
        ChangeKind::SecurityGroup,
        format!("security group {group}"),
        summary,
        vec![aspect],
    ))
}

fn node_group(event: &TrailEvent, request: &Value, path: &RequestPath) -> Option<Interpreted> {
    const CHANGES: [&str; 4] = [
        "UpdateNodegroupConfig",
        "UpdateNodegroupVersion",
        "CreateNodegroup",
        "DeleteNodegroup",
    ];
    if !CHANGES.contains(&event.name.as_str()) {
        return None;
    }
    let cluster = request["name"]
        .as_str()
        .or_else(|| request["clusterName"].as_str());
    if let (Some(wanted), Some(cluster)) = (&path.cluster, cluster)
        && wanted != cluster
    {
        return None;
    }
    let group = request["nodegroupName"].as_str().unwrap_or("a node group");
    let scaling = &request["scalingConfig"];
    let sizes: Vec<String> = [
        ("minSize", "min"),
        ("maxSize", "max"),
        ("desiredSize", "desired"),
    ]
    .iter()
    .filter_map(|(key, label)| Some(format!("{label} {}", scalar(&scaling[*key])?)))
    .collect();
    let summary = if sizes.is_empty() {
        sentence(&event.name)
    } else {
        format!("scaling set to {}", sizes.join(", "))
    };
    Some((
        ChangeKind::NodeGroup,
        match cluster {
            Some(cluster) => format!("node group {group} of {cluster}"),
            None => format!("node group {group}"),
        },
        summary,
        vec![Aspect::Nodes],
    ))
}

/// Who made a change, and with what.
struct Identity {
    principal: Option<String>,
    tool: Option<String>,
    automatic: bool,
}

impl Identity {
    fn of(record: &Value, event: &TrailEvent) -> Self {
        let identity = &record["userIdentity"];
        let kind = identity["type"].as_str().unwrap_or_default();
        let principal = match kind {
            // `arn:aws:sts::1:assumed-role/platform-admin/jane`: the role and the session.
            "AssumedRole" => identity["arn"]
                .as_str()
                .and_then(|arn| arn.split_once(":assumed-role/"))
                .map(|(_, rest)| rest.to_owned()),
            "AWSService" => identity["invokedBy"].as_str().map(str::to_owned),
            _ => identity["arn"].as_str().map(str::to_owned),
        }
        .or_else(|| event.username.clone());
        let agent = record["userAgent"].as_str().unwrap_or_default();
        let tool = tool_of(agent);
        Identity {
            automatic: kind == "AWSService"
                || agent.contains("autoscaling.amazonaws.com")
                || agent.contains("karpenter"),
            principal,
            tool,
        }
    }
}

/// The load balancer controller registers and deregisters targets as pods
/// come and go: a consequence of rollouts and scaling, not a change of its own.
fn automatic_registration(kind: ChangeKind, identity: &Identity) -> bool {
    kind == ChangeKind::Targets && identity.tool.as_deref() == Some("AWS Load Balancer Controller")
}

/// The tool in a user agent, for people.
fn tool_of(agent: &str) -> Option<String> {
    const TOOLS: [(&str, &str); 9] = [
        ("elbv2.k8s.aws", "AWS Load Balancer Controller"),
        ("aws-cli", "aws-cli"),
        ("console.amazonaws.com", "console"),
        ("signin.amazonaws.com", "console"),
        ("Terraform", "Terraform"),
        ("cloudformation.amazonaws.com", "CloudFormation"),
        ("karpenter", "Karpenter"),
        ("eksctl", "eksctl"),
        ("Boto3", "boto3"),
    ];
    TOOLS
        .iter()
        .find(|(needle, _)| agent.contains(needle))
        .map(|(_, tool)| (*tool).to_owned())
        .or_else(|| {
            (!agent.is_empty()).then(|| agent.split(['/', ' ']).next().unwrap_or(agent).to_owned())
        })
}

fn target_ids(request: &Value) -> String {
    let ids: Vec<String> = request["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str().map(str::to_owned))
        .take(3)
        .collect();
    if ids.is_empty() {
        String::new()
    } else {
        format!(" ({})", ids.join(", "))
    }
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(scalar).collect(),
        Value::Object(map) => map.get("items").map(strings).unwrap_or_default(),
        other => scalar(other).into_iter().collect(),
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `ModifyRule` -> `rule modified`.
fn sentence(name: &str) -> String {
    const VERBS: [(&str, &str); 5] = [
        ("Modify", "modified"),
        ("Create", "created"),
        ("Delete", "deleted"),
        ("Set", "set"),
        ("Update", "updated"),
    ];
    for (prefix, verb) in VERBS {
        if let Some(object) = name.strip_prefix(prefix) {
            let mut words = String::new();
            for (i, c) in object.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    words.push(' ');
                }
                words.push(c.to_ascii_lowercase());
            }
            return format!("{words} {verb}");
        }
    }
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    const GROUP: &str = "arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/k8s-shop-cart-1a2b3c/0123456789abcdef";
    const BALANCER: &str = "arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/app/k8s-shop/50dc6c495c0c9188";

    fn path() -> RequestPath {
        RequestPath {
            load_balancer_arn: Some(BALANCER.into()),
            load_balancer_dimension: Some("app/k8s-shop/50dc6c495c0c9188".into()),
            target_groups: [(GROUP.to_owned(), "k8s-shop-cart-1a2b3c".to_owned())].into(),
            security_groups: vec!["sg-0alb".into()],
            cluster: Some("shop-prod".into()),
        }
    }

    fn event(name: &str, source: &str, record: Value) -> TrailEvent {
        TrailEvent {
            id: "e1".into(),
            name: name.into(),
            at: Utc.with_ymd_and_hms(2026, 12, 1, 10, 0, 0).unwrap(),
            source: source.into(),
            username: Some("jane".into()),
            resources: Vec::new(),
            record: Some(record.to_string()),
        }
    }

    fn by_jane(request: Value, agent: &str) -> Value {
        serde_json::json!({
            "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::111122223333:assumed-role/platform-admin/jane@example.com"},
            "userAgent": agent,
            "readOnly": false,
            "requestParameters": request,
        })
    }

    #[test]
    fn a_health_check_path_edit_names_the_new_path_and_who_made_it() {
        let e = event(
            "ModifyTargetGroup",
            "elasticloadbalancing.amazonaws.com",
            by_jane(
                serde_json::json!({"targetGroupArn": GROUP, "healthCheckPath": "/health"}),
                "aws-cli/2.15.30 Python/3.11.8 command/elbv2.modify-target-group",
            ),
        );
        let change = interpret(&e, &path()).unwrap();
        assert_eq!(change.kind, ChangeKind::TargetGroup);
        assert_eq!(change.subject, "target group k8s-shop-cart-1a2b3c");
        assert_eq!(change.summary, "health-check path -> /health");
        assert_eq!(
            change.details,
            ["by platform-admin/jane@example.com (aws-cli)"]
        );
        assert!(!change.automatic);
    }

    #[test]
    fn a_weighted_forward_names_each_group_and_its_share_of_the_traffic() {
        let canary = "arn:aws:elasticloadbalancing:us-west-2:111122223333:targetgroup/k8s-shop-canary-9f8e7d/0badc0de";
        let request = serde_json::json!({
            "listenerArn": "arn:aws:elasticloadbalancing:us-west-2:111122223333:listener/app/k8s-shop/50dc6c495c0c9188/f00d",
            "defaultActions": [{"type": "forward", "forwardConfig": {"targetGroups": [
                {"targetGroupArn": GROUP, "weight": 50},
                {"targetGroupArn": canary, "weight": 50}
            ]}}]
        });
        let e = event(
            "ModifyListener",
            "elasticloadbalancing.amazonaws.com",
            by_jane(request, "console.amazonaws.com"),
        );
        let change = interpret(&e, &path()).unwrap();
        assert_eq!(change.kind, ChangeKind::Listener);
        assert_eq!(
            change.summary,
            "listener modified: forward to k8s-shop-cart-1a2b3c 50 %, k8s-shop-canary-9f8e7d 50 %"
        );
    }

    #[test]
    fn a_revoked_rule_that_let_the_load_balancer_in_is_a_security_group_change() {
        let request = serde_json::json!({"groupId": "sg-0nodes", "ipPermissions": {"items": [
            {"ipProtocol": "tcp", "fromPort": 30000, "toPort": 32767, "groups": {"items": [{"groupId": "sg-0alb"}]}}
        ]}});
        let e = event(
            "RevokeSecurityGroupIngress",
            "ec2.amazonaws.com",
            by_jane(request, "console.amazonaws.com"),
        );
        let change = interpret(&e, &path()).unwrap();
        assert_eq!(change.subject, "security group sg-0nodes");
        assert_eq!(
            change.summary,
            "ingress rule revoked: tcp 30000-32767 from sg-0alb"
        );
    }

    #[test]
    fn reads_other_load_balancers_and_tags_are_not_changes_to_the_path() {
        let other = event(
            "ModifyTargetGroup",
            "elasticloadbalancing.amazonaws.com",
            by_jane(
                serde_json::json!({"targetGroupArn": "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/other/1", "healthCheckPath": "/x"}),
                "",
            ),
        );
        let mut read = event(
            "DescribeTargetGroups",
            "elasticloadbalancing.amazonaws.com",
            serde_json::json!({"readOnly": true}),
        );
        read.record = None;
        let tags = event(
            "AddTags",
            "elasticloadbalancing.amazonaws.com",
            by_jane(serde_json::json!({"resourceArns": [GROUP]}), ""),
        );
        for e in [other, read, tags] {
            assert!(interpret(&e, &path()).is_none(), "{}", e.name);
        }
    }

    #[test]
    fn the_controller_registering_targets_is_automatic() {
        let e = event(
            "RegisterTargets",
            "elasticloadbalancing.amazonaws.com",
            by_jane(
                serde_json::json!({"targetGroupArn": GROUP, "targets": [{"id": "10.0.1.5", "port": 8080}]}),
                "elbv2.k8s.aws/v2.7.1 aws-sdk-go/1.50",
            ),
        );
        let change = interpret(&e, &path()).unwrap();
        assert_eq!(change.summary, "1 target registered (10.0.1.5)");
        assert!(change.automatic);
    }

    #[test]
    fn a_node_group_of_another_cluster_is_ignored() {
        let request = serde_json::json!({"name": "other", "nodegroupName": "ng", "scalingConfig": {"desiredSize": 1}});
        let e = event(
            "UpdateNodegroupConfig",
            "eks.amazonaws.com",
            by_jane(request, ""),
        );
        assert!(interpret(&e, &path()).is_none());
        let request = serde_json::json!({"name": "shop-prod", "nodegroupName": "general", "scalingConfig": {"minSize": 2, "maxSize": 4}});
        let e = event(
            "UpdateNodegroupConfig",
            "eks.amazonaws.com",
            by_jane(request, ""),
        );
        assert_eq!(
            interpret(&e, &path()).unwrap().summary,
            "scaling set to min 2, max 4"
        );
    }
}
