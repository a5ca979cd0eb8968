//! template.yaml passes cfn-lint (1.53.3) and `sam validate`, grants only
//! read actions plus publishing to its own topic and queues and reading its
//! own secret; deliberately broken copies are caught.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn venv(tool: &str) -> PathBuf {
    support::repo_root().join(".venv-deploy/bin").join(tool)
}

fn cfn_lint(template: &Path) -> Output {
    Command::new(venv("cfn-lint"))
        .arg(template)
        .output()
        .expect("cfn-lint in .venv (scripts/setup.sh)")
}

fn sam_validate(template: &Path) -> Output {
    Command::new(venv("sam"))
        .args(["validate", "--region", "us-east-1", "-t"])
        .arg(template)
        .env("SAM_CLI_TELEMETRY", "0")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .output()
        .expect("sam in .venv-deploy (scripts/setup.sh)")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn template() -> PathBuf {
    support::repo_root().join("template.yaml")
}

/// The template as JSON; CloudFormation's short tags (!Ref, !Sub) become their long forms.
fn template_json(path: &Path) -> Value {
    let script = r#"
import sys, json, yaml
class Loader(yaml.SafeLoader): pass
def tag(loader, suffix, node):
    name = "Ref" if suffix == "Ref" else "Fn::" + suffix
    if isinstance(node, yaml.ScalarNode): value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode): value = loader.construct_sequence(node, deep=True)
    else: value = loader.construct_mapping(node, deep=True)
    return {name: value}
Loader.add_multi_constructor("!", tag)
print(json.dumps(yaml.load(open(sys.argv[1]), Loader=Loader)))
"#;
    let output = Command::new(venv("python"))
        .arg("-c")
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Actions the template grants that are not reads of other resources or writes to the bot's own.
fn policy_problems(template: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, resource) in template["Resources"].as_object().unwrap() {
        // A conditional policy (`!If [cond, policy, AWS::NoValue]`) is checked in both branches.
        let policies = resource["Properties"]["Policies"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| match p["Fn::If"].as_array() {
                Some(branches) => branches[1..]
                    .iter()
                    .filter(|b| b.get("Ref").is_none()) // AWS::NoValue
                    .collect::<Vec<_>>(),
                None => vec![p],
            })
            // An IAM role's inline policies nest the document.
            .map(|p| p.get("PolicyDocument").unwrap_or(p));
        for policy in policies {
            for statement in policy["Statement"].as_array().into_iter().flatten() {
                if statement["Effect"] != "Allow" {
                    problems.push(format!("{name}: Effect {}", statement["Effect"]));
                }
                let actions: Vec<&str> = match &statement["Action"] {
                    Value::String(a) => vec![a.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                for action in actions {
                    let verb = action.split_once(':').map_or(action, |(_, v)| v);
                    let own_write = [
                        "sns:Publish",
                        "sqs:SendMessage",
                        // The hold queue's messages are the bot's own held diagnoses.
                        "sqs:ReceiveMessage",
                        "sqs:DeleteMessage",
                        "secretsmanager:GetSecretValue",
                        "dynamodb:PutItem",
                        "dynamodb:UpdateItem",
                        "dynamodb:DeleteItem",
                        "ssm:GetParameter",
                        "events:PutEvents",
                    ]
                    .contains(&action);
                    // Reads whose names do not say so, granted on named resources only:
                    // an AMP workspace, the member roles (themselves read-only).
                    // The feedback table's answers and index are the bot's own.
                    // A Logs Insights query over the container log groups.
                    let scoped_read = [
                        "aps:QueryMetrics",
                        "sts:AssumeRole",
                        "dynamodb:Query",
                        "logs:StartQuery",
                    ]
                    .contains(&action);
                    // A read IAM cannot scope to a resource (CloudTrail's
                    // management events: what changed on the path), so on "*".
                    // StopQuery ends a query the bot started; it has no resource either.
                    let unscopable_read =
                        ["cloudtrail:LookupEvents", "logs:StopQuery"].contains(&action);
                    let read = ["Describe", "Get", "List"]
                        .iter()
                        .any(|p| verb.starts_with(p))
                        && !verb.contains('*')
                        || scoped_read
                        || unscopable_read;
                    let scoped = own_write || scoped_read;
                    if scoped && statement["Resource"] == "*" {
                        problems.push(format!("{name}: {action} on every resource"));
                    } else if !own_write && !read {
                        problems.push(format!("{name}: {action} is not a read action"));
                    }
                }
            }
        }
    }
    problems
}

/// A copy of template.yaml with one edit, under target/.
fn broken(name: &str, from: &str, to: &str) -> PathBuf {
    let source = std::fs::read_to_string(template()).unwrap();
    assert!(
        source.contains(from),
        "the template no longer contains {from:?}"
    );
    let dir = support::repo_root().join("target/templates");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}.yaml", std::process::id()));
    std::fs::write(&path, source.replacen(from, to, 1)).unwrap();
    path
}

#[test]
fn the_template_passes_cfn_lint_and_sam_validate() {
    let lint = cfn_lint(&template());
    assert!(lint.status.success(), "cfn-lint:\n{}", text(&lint));
    let sam = sam_validate(&template());
    assert!(sam.status.success(), "sam validate:\n{}", text(&sam));
    assert!(
        text(&sam).contains("is a valid SAM Template"),
        "{}",
        text(&sam)
    );
}

#[test]
fn the_example_alarms_pass_cfn_lint() {
    for template in [
        "alb-target-group-alarms.yaml",
        "nlb-target-group-alarms.yaml",
    ] {
        let lint = cfn_lint(&support::repo_root().join("infra/alarms").join(template));
        assert!(
            lint.status.success(),
            "{template}: cfn-lint:\n{}",
            text(&lint)
        );
    }
}

fn member_template() -> PathBuf {
    support::repo_root().join("infra/member/template.yaml")
}

#[test]
fn the_member_template_passes_cfn_lint() {
    let lint = cfn_lint(&member_template());
    assert!(lint.status.success(), "cfn-lint:\n{}", text(&lint));
}

#[test]
fn the_member_role_reads_only_and_trusts_only_the_central_function() {
    let member = template_json(&member_template());
    assert_eq!(policy_problems(&member), Vec::<String>::new());
    assert_eq!(trust_problems(&member), Vec::<String>::new());
    let reader = &member["Resources"]["ReaderRole"]["Properties"];
    // Exactly the read actions of infra/iam/diagnose-policy.json, none of its own writes.
    let granted: std::collections::BTreeSet<String> =
        reader["Policies"][0]["PolicyDocument"]["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["Action"].as_array().unwrap().iter())
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
    let diagnose: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo_root().join("infra/iam/diagnose-policy.json"))
            .unwrap(),
    )
    .unwrap();
    let reads: std::collections::BTreeSet<String> = diagnose["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| match &s["Action"] {
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        })
        .filter_map(|a| a.as_str().map(str::to_owned))
        .filter(|a| {
            ["Describe", "Get", "List", "Lookup"]
                .iter()
                .any(|p| a.contains(&format!(":{p}")))
                // A Logs Insights query over the container logs, and stopping it.
                || ["logs:StartQuery", "logs:StopQuery"].contains(&a.as_str())
        })
        // Reads of the bot's own state (its tables and hold queue) live in the central account.
        .filter(|a| !a.starts_with("dynamodb:") && !a.starts_with("sqs:"))
        .collect();
    assert_eq!(granted, reads);
}

#[test]
fn a_member_role_that_trusts_everyone_is_caught() {
    let source = std::fs::read_to_string(member_template()).unwrap();
    let from = "Principal: {AWS: !Ref CentralFunctionRoleArn}";
    assert!(source.contains(from));
    let dir = support::repo_root().join("target/templates");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("member-trust-{}.yaml", std::process::id()));
    std::fs::write(&path, source.replacen(from, "Principal: {AWS: \"*\"}", 1)).unwrap();
    assert_eq!(
        trust_problems(&template_json(&path)),
        vec!["ReaderRole trusts {\"AWS\":\"*\"}, not only the central function's role".to_owned()]
    );
}

/// Who the member role trusts, when it is anyone but the central function's role.
fn trust_problems(member: &Value) -> Vec<String> {
    member["Resources"]["ReaderRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["Principal"] != serde_json::json!({"AWS": {"Ref": "CentralFunctionRoleArn"}}))
        .map(|s| {
            format!(
                "ReaderRole trusts {}, not only the central function's role",
                s["Principal"]
            )
        })
        .collect()
}

#[test]
fn the_template_grants_only_reads_and_the_bots_own_writes() {
    assert_eq!(
        policy_problems(&template_json(&template())),
        Vec::<String>::new()
    );
}

#[test]
fn every_function_runs_as_the_card_says() {
    let t = template_json(&template());
    for function in [
        "DiagnoseFunction",
        "NotifySlackFunction",
        "FeedbackFunction",
        "DigestFunction",
    ] {
        let f = &t["Resources"][function];
        assert_eq!(f["Type"], "AWS::Serverless::Function");
        assert_eq!(f["Metadata"]["BuildMethod"], "rust-cargolambda");
        // Asynchronous invocations keep what fails; the feedback function
        // answers Slack synchronously, through its URL, and keeps nothing.
        // The digest is invoked by EventBridge Scheduler, whose retry policy keeps it.
        if function != "FeedbackFunction" && function != "DigestFunction" {
            assert!(
                f["Properties"]["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]["Type"]
                    == "SQS"
            );
        }
        assert!(
            f["Properties"]["ReservedConcurrentExecutions"]
                .as_u64()
                .is_some()
        );
    }
    assert_eq!(
        t["Resources"]["DigestFunction"]["Properties"]["Events"]["Scheduled"]["Type"],
        "ScheduleV2"
    );
    assert_eq!(t["Globals"]["Function"]["Runtime"], "provided.al2023");
    assert_eq!(t["Globals"]["Function"]["Architectures"][0], "arm64");
    assert_eq!(t["Globals"]["Function"]["Handler"], "bootstrap");
}

#[test]
fn a_wrong_event_type_is_caught_by_the_validators() {
    let path = broken(
        "event-type",
        "          Type: SNS\n          Properties:\n            Topic: !Ref DiagnosisTopic",
        "          Type: SNSTopic\n          Properties:\n            Topic: !Ref DiagnosisTopic",
    );
    let lint = cfn_lint(&path);
    let sam = sam_validate(&path);
    assert!(
        !lint.status.success() || !sam.status.success(),
        "neither validator noticed:\n{}\n{}",
        text(&lint),
        text(&sam)
    );
}

#[test]
fn a_typo_in_an_iam_effect_is_caught_by_cfn_lint() {
    let path = broken(
        "effect",
        "            - Sid: ReadAlarmsAndMetrics\n              Effect: Allow",
        "            - Sid: ReadAlarmsAndMetrics\n              Effect: Alow",
    );
    let lint = cfn_lint(&path);
    assert!(
        !lint.status.success(),
        "cfn-lint did not notice:\n{}",
        text(&lint)
    );
}

#[test]
fn a_write_action_is_caught_by_the_read_only_check() {
    let path = broken(
        "write",
        "cloudwatch:DescribeAlarms,",
        "cloudwatch:SetAlarmState, cloudwatch:DescribeAlarms,",
    );
    let problems = policy_problems(&template_json(&path));
    assert_eq!(
        problems,
        vec!["DiagnoseFunction: cloudwatch:SetAlarmState is not a read action".to_owned()]
    );
}

#[test]
fn a_thread_table_write_widened_to_every_table_is_caught() {
    let path = broken(
        "thread-write",
        "Resource: !GetAtt SlackThreadsTable.Arn",
        "Resource: \"*\"",
    );
    let problems = policy_problems(&template_json(&path));
    assert_eq!(
        problems,
        vec![
            "NotifySlackFunction: dynamodb:PutItem on every resource".to_owned(),
            "NotifySlackFunction: dynamodb:UpdateItem on every resource".to_owned()
        ]
    );
}

#[test]
fn the_feedback_function_writes_only_the_feedback_table() {
    let t = template_json(&template());
    let function = &t["Resources"]["FeedbackFunction"];
    assert_eq!(
        function["Properties"]["FunctionUrlConfig"]["AuthType"],
        "NONE"
    );
    let writes: Vec<&Value> = function["Properties"]["Policies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["Statement"].as_array().into_iter().flatten())
        .filter(|s| s["Action"].to_string().contains("dynamodb:"))
        .collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(
        writes[0]["Resource"],
        json!({"Fn::GetAtt": "FeedbackTable.Arn"})
    );
}

#[test]
fn a_feedback_write_widened_to_every_table_is_caught() {
    let path = broken(
        "feedback-write",
        "Action: [dynamodb:GetItem, dynamodb:PutItem, dynamodb:Query]\n              Resource: !GetAtt FeedbackTable.Arn",
        "Action: [dynamodb:GetItem, dynamodb:PutItem, dynamodb:Query]\n              Resource: \"*\"",
    );
    let problems = policy_problems(&template_json(&path));
    assert_eq!(
        problems,
        vec![
            "FeedbackFunction: dynamodb:PutItem on every resource".to_owned(),
            "FeedbackFunction: dynamodb:Query on every resource".to_owned()
        ]
    );
}

#[test]
fn a_secure_string_read_widened_to_every_parameter_is_caught() {
    let path = broken(
        "ssm-read",
        "Resource: !Sub \"arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${SlackSecretParameter}\"",
        "Resource: \"*\"",
    );
    let problems = policy_problems(&template_json(&path));
    assert_eq!(
        problems,
        vec!["NotifySlackFunction: ssm:GetParameter on every resource".to_owned()]
    );
}
