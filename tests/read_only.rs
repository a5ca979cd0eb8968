//! Nothing the bot is granted can change AWS or Kubernetes: the IAM policies
//! allow only reads plus writes to its own topic, queues, thread table and
//! feedback table (the one table the feedback function writes) (and
//! reading only its own secret), and the RBAC
//! role only get/list/watch. A deliberately broken copy of each is caught.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::process::Command;

use serde_json::{Value, json};

const READ_PREFIXES: [&str; 3] = ["Describe", "Get", "List"];
/// Actions the bot needs only on its own resources: its writes, its secret
/// and the key of its SecureString, and reading back its own held diagnoses.
const OWN_WRITES: [&str; 10] = [
    "sns:Publish",
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "secretsmanager:GetSecretValue",
    "ssm:GetParameter",
    "kms:Decrypt",
];

/// Every problem with an IAM policy document, empty when it is read-only.
/// Reads whose names do not say so (querying an AMP workspace, assuming the
/// read-only member role), granted only on named resources.
/// `dynamodb:Query` reads the bot's own feedback table (answers to a diagnosis, a service's track record).
/// `logs:StartQuery` runs a read-only Logs Insights query over the container log groups.
const SCOPED_READS: [&str; 4] = [
    "aps:QueryMetrics",
    "sts:AssumeRole",
    "dynamodb:Query",
    "logs:StartQuery",
];

/// Reads whose names do not say so and that IAM cannot scope to a resource:
/// `cloudtrail:LookupEvents` reads the management events (what changed on the
/// load balancer, its target groups and security groups) and supports no
/// resource-level permission, so it is granted on `*` on purpose.
/// `logs:StopQuery` stops a Logs Insights query the bot itself started (it
/// ends a scan, changes no data) and, like `logs:StartQuery`'s results, has
/// no resource-level permission.
const UNSCOPABLE_READS: [&str; 2] = ["cloudtrail:LookupEvents", "logs:StopQuery"];

fn iam_problems(policy: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for statement in policy["Statement"].as_array().unwrap() {
        if statement["Effect"] != "Allow" {
            problems.push(format!("unexpected Effect {}", statement["Effect"]));
            continue;
        }
        let actions: Vec<&str> = match &statement["Action"] {
            Value::String(a) => vec![a.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            other => {
                problems.push(format!("unreadable Action {other}"));
                continue;
            }
        };
        for action in actions {
            let verb = action.split_once(':').map_or(action, |(_, v)| v);
            if OWN_WRITES.contains(&action) {
                if statement["Resource"] == "*" {
                    problems.push(format!(
                        "{action} on every resource, not only the bot's own"
                    ));
                }
            } else if UNSCOPABLE_READS.contains(&action) {
                // Read-only by definition; IAM has no resource to narrow it to.
            } else if SCOPED_READS.contains(&action) {
                if statement["Resource"] == "*" {
                    problems.push(format!(
                        "{action} on every resource, not only the workspace"
                    ));
                }
            } else if verb.contains('*') || !READ_PREFIXES.iter().any(|p| verb.starts_with(p)) {
                problems.push(format!("{action} is not a read action"));
            }
        }
    }
    problems
}

/// Every problem with RBAC documents (as JSON), empty when they are read-only.
fn rbac_problems(documents: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for doc in documents
        .iter()
        .filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role")
    {
        for rule in doc["rules"].as_array().unwrap() {
            for verb in rule["verbs"].as_array().unwrap() {
                if !["get", "list", "watch"].contains(&verb.as_str().unwrap()) {
                    problems.push(format!(
                        "{} grants {verb} on {}",
                        doc["metadata"]["name"], rule["resources"]
                    ));
                }
            }
            let resources: Vec<&str> = rule["resources"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            // `get` on these runs commands in pods or reaches a node's kubelet.
            let reaches_in = [
                "pods/exec",
                "pods/attach",
                "pods/portforward",
                "nodes/proxy",
            ];
            if resources.iter().any(|r| reaches_in.contains(r)) {
                problems.push(format!(
                    "{} reaches into pods or nodes: {resources:?}",
                    doc["metadata"]["name"]
                ));
            }
            if resources.iter().any(|r| *r == "*" || *r == "secrets") {
                problems.push(format!("{} reaches {resources:?}", doc["metadata"]["name"]));
            }
            if resources.contains(&"services/proxy")
                && rule["resourceNames"]
                    .as_array()
                    .is_none_or(|n| n.is_empty())
            {
                problems.push("services/proxy on every service, not only Prometheus".to_owned());
            }
        }
    }
    problems
}

fn yaml_documents(path: &std::path::Path) -> Vec<Value> {
    let output = Command::new(support::repo_root().join(".venv/bin/python"))
        .arg("-c")
        .arg("import sys, json, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))")
        .arg(path)
        .output()
        .expect("the project's virtualenv (scripts/setup.sh)");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_iam_policies_grant_only_reads_and_the_bots_own_writes() {
    for name in [
        "diagnose-policy.json",
        "notify-slack-policy.json",
        "feedback-policy.json",
        "digest-policy.json",
    ] {
        let policy: Value = serde_json::from_str(
            &std::fs::read_to_string(support::repo_root().join("infra/iam").join(name)).unwrap(),
        )
        .unwrap();
        assert_eq!(iam_problems(&policy), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn the_feedback_function_writes_only_the_feedback_table() {
    let policy: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo_root().join("infra/iam/feedback-policy.json"))
            .unwrap(),
    )
    .unwrap();
    for statement in policy["Statement"].as_array().unwrap() {
        let actions = statement["Action"].to_string();
        if actions.contains("dynamodb:") {
            assert_eq!(
                statement["Resource"],
                "arn:aws:dynamodb:${Region}:${Account}:table/alarm-triage-feedback",
                "{statement}"
            );
        }
    }
}

#[test]
fn a_write_action_or_a_wildcard_in_the_policy_is_caught() {
    let broken = json!({"Statement": [
        {"Effect": "Allow", "Action": ["cloudwatch:DescribeAlarms", "cloudwatch:SetAlarmState"], "Resource": "*"},
        {"Effect": "Allow", "Action": "elasticloadbalancing:*", "Resource": "*"},
        {"Effect": "Allow", "Action": "sns:Publish", "Resource": "*"},
        {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": "*"},
        {"Effect": "Allow", "Action": "aps:QueryMetrics", "Resource": "*"},
        {"Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": "arn:aws:aps:eu-west-1:1:workspace/ws-1"},
        {"Effect": "Allow", "Action": ["dynamodb:Query", "dynamodb:Scan"], "Resource": "*"}
    ]});
    let problems = iam_problems(&broken);
    assert_eq!(problems.len(), 8, "{problems:?}");
}

#[test]
fn the_rbac_role_grants_only_get_list_and_watch() {
    let documents = yaml_documents(&support::repo_root().join("infra/k8s/clusterrole.yaml"));
    assert!(documents.iter().any(|d| d["kind"] == "ClusterRole"));
    assert_eq!(rbac_problems(&documents), Vec::<String>::new());
}

#[test]
fn an_rbac_delete_is_caught() {
    let mut documents = yaml_documents(&support::repo_root().join("infra/k8s/clusterrole.yaml"));
    documents[0]["rules"][0]["verbs"] = json!(["get", "list", "delete"]);
    documents[2]["rules"][0]["resourceNames"] = json!([]);
    let problems = rbac_problems(&documents);
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn exec_into_a_pod_or_a_nodes_kubelet_is_caught_even_as_a_get() {
    let mut documents = yaml_documents(&support::repo_root().join("infra/k8s/clusterrole.yaml"));
    documents[0]["rules"][0]["resources"] = json!(["pods", "pods/exec"]);
    documents[0]["rules"][1]["resources"] = json!(["nodes/proxy"]);
    let problems = rbac_problems(&documents);
    assert_eq!(problems.len(), 2, "{problems:?}");
}
