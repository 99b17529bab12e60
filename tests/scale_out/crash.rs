//! Crash injection: the real `travel-server` process is killed (SIGKILL: no shutdown, no flush)
//! at each step boundary of `book_trip` and of `group_booking`, restarted on the same
//! `ELICIT_STATE_KEYS` and the same store, and a client carries the flow on.
//!
//! `book_trip`, one flow killed four times:
//! - while the round running its `once` (the quote, minted once per flow) is in flight: the kill
//!   lands before, inside or after the `once` as the race falls, and the retried round carries on
//!   (a claim left by the dead process heals when its lease passes);
//! - after the trip form's round was answered: the same round replayed after the restart asks for
//!   the same payment step, not a second one;
//! - after the person approved the payment on the page and before the client's retry: the retry
//!   moves on to the confirmation, the approval counts;
//! - after the finish: every replay answers the same booking, with the same reference.
//!
//! `group_booking`, two tasks killed at once: one mid-work (inside its `availability` once), one
//! while its question waits. Their handlers die with the process; each task then reads a clear
//! `failed` (at once on SQLite, whose next opener ends what the dead process ran; once the lease
//! passes on Redis), never `working` forever.
//!
//! The sequence passes on the durable default (`--store sqlite:PATH`) and on `--store redis://`
//! (the server process dies, Redis lives). On `--store memory`, the default before, it fails at
//! the payment step: after a kill between the approval and the retry, the retry is asked to pay
//! again — the approval the person gave is gone, and with a real payment provider that is a
//! second charge. [`the_in_process_store_forgets_the_approval_when_the_process_dies`] shows it;
//! it is why the servers keep their records in a SQLite file by default.

use std::process::Command;
use std::time::Duration;

use elicit_examples::loadgen::{McpClient, Round, requested_url, trip_answer};
use elicit_test_support::process::Listening;
use elicit_test_support::redis::Redis;
use elicit_test_support::server::process::travel_server_bin;
use elicit_test_support::{cli, wait};
use serde_json::{Map, Value, json};

/// Fixed sealing keys: a restarted server opens the states the dead one sealed.
const STATE_KEYS: &str = "Y3Jhc2gtaW5qZWN0aW9uLXRlc3Qta2V5LTMyLWJ5dGU=";
/// Bound on each test, so a hang fails instead of stalling the suite (a Redis task waits for its
/// lease, 30 s).
const TEST_BOUND: Duration = Duration::from_secs(150);
/// How long a retry may keep meeting a claim the dead process held (its lease is 30 s).
const HEALED: Duration = Duration::from_secs(60);

/// A `travel-server --store STORE` on loopback, killed with SIGKILL and started again at will.
struct Travel {
    store: String,
    server: Option<Listening>,
}

impl Travel {
    fn start(store: &str) -> Travel {
        let mut travel = Travel { store: store.to_owned(), server: None };
        travel.server = Some(travel.spawn());
        travel
    }

    fn spawn(&self) -> Listening {
        let mut command = Command::new(travel_server_bin());
        command
            .args(["--listen", "127.0.0.1:0", "--store", &self.store])
            .env("ELICIT_STATE_KEYS", STATE_KEYS)
            .env_remove("ELICIT_BEARER_TOKENS")
            .env_remove("RUST_LOG");
        Listening::start(command)
    }

    /// SIGKILL (dropping the process kills and reaps it), then a new process on the same store.
    fn crash_and_restart(&mut self) {
        self.server.take();
        self.server = Some(self.spawn());
    }

    fn server(&self) -> &Listening {
        self.server.as_ref().expect("the server runs")
    }

    fn mcp(&self) -> String {
        self.server().mcp_url()
    }

    /// The payment page of step `id`, on the server running now.
    fn page(&self, id: &str) -> String {
        format!("{}/pay/{id}", self.server().base_url())
    }
}

fn asked(reply: &Value, key: &str) -> (Map<String, Value>, Option<String>) {
    Round::from_reply(reply).expect("a JSON-RPC response").expect_asked(key).unwrap_or_else(|e| panic!("{e}"))
}

fn complete_text(reply: &Value) -> String {
    match Round::from_reply(reply).expect("a JSON-RPC response") {
        Round::Complete { text, is_error: false } => text,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// The id of the payment step a round asked for.
fn payment_id(requests: &Map<String, Value>) -> String {
    let url = requested_url(requests, "payment").expect("a payment URL");
    url.rsplit('/').next().expect("an id").to_owned()
}

fn trip() -> Value {
    json!({"trip": {"action": "accept", "content": trip_answer("crash", 1)}})
}

fn consent() -> Value {
    json!({"payment": {"action": "accept"}})
}

fn confirm() -> Value {
    json!({"confirm": {"action": "accept", "content": {"confirm": true}}})
}

/// One `book_trip` round, retried while it meets a claim the dead process still holds under its
/// lease (a clear "retry later"); anything else is returned.
async fn round(travel: &Travel, client: &McpClient, answers: &Value, state: Option<&str>) -> Value {
    let deadline = tokio::time::Instant::now() + HEALED;
    loop {
        let reply = client.call_tool(&travel.mcp(), "book_trip", Some(answers.clone()), state).await.expect("a reply");
        let busy = reply.to_string().contains("still being run by another round");
        if !busy {
            return reply;
        }
        assert!(tokio::time::Instant::now() < deadline, "the dead process's claim never healed: {reply}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `book_trip` through a kill at each of its step boundaries.
async fn book_trip_through_crashes(travel: &mut Travel) {
    let client = McpClient::new(Duration::from_secs(30));
    let first = client.call_tool(&travel.mcp(), "book_trip", None, None).await.expect("book_trip");
    let (_, s0) = asked(&first, "trip");

    // Killed while the round running the quote's `once` is in flight.
    let in_flight = {
        let (client, mcp, state) = (client.clone(), travel.mcp(), s0.clone());
        tokio::spawn(async move { client.call_tool(&mcp, "book_trip", Some(trip()), state.as_deref()).await })
    };
    tokio::task::yield_now().await;
    travel.crash_and_restart();
    // Whether it was answered before the kill or not, the round carries on.
    let _ = in_flight.await;
    let (requests, s1) = asked(&round(travel, &client, &trip(), s0.as_deref()).await, "payment");
    let step = payment_id(&requests);

    // Killed after the trip form's round was answered: the replayed round asks for the same
    // payment step (and so the same quote), not a second payment.
    travel.crash_and_restart();
    let (again, _) = asked(&round(travel, &client, &trip(), s0.as_deref()).await, "payment");
    assert_eq!(payment_id(&again), step, "after the restart the trip round minted another payment step");

    // The person approves on the page; the process dies before the client retries.
    client.approve_payment(&travel.page(&step)).await.expect("the page takes the approval");
    travel.crash_and_restart();
    let reply = round(travel, &client, &consent(), s1.as_deref()).await;
    let (_, s2) = asked(&reply, "confirm");

    // Killed after the finish: every replay, of every round, answers the same booking.
    let done = complete_text(&round(travel, &client, &confirm(), s2.as_deref()).await);
    let reference = elicit_test_support::reference::booking_reference(&done)
        .unwrap_or_else(|| panic!("no reference in {done}"))
        .to_owned();
    assert!(done.starts_with("Booked!"), "{done}");
    travel.crash_and_restart();
    for (answers, state) in [(confirm(), &s2), (consent(), &s1), (trip(), &s0)] {
        let replay = complete_text(&round(travel, &client, &answers, state.as_deref()).await);
        assert_eq!(replay, done, "a replay after the restart answered another outcome");
    }
    assert!(done.contains(&reference));
}

/// `_meta` of a client declaring the Tasks extension (and form elicitation).
fn task_meta() -> Value {
    json!({
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        }
    })
}

/// Starts `group_booking` as a task; its id.
async fn start_group_booking(travel: &Travel, client: &McpClient, checks: u64) -> String {
    let params =
        json!({"name": "group_booking", "arguments": {"travellers": 4, "checks": checks}, "_meta": task_meta()});
    let reply = client.request(&travel.mcp(), "tools/call", params).await.expect("group_booking");
    let result = &reply["result"];
    assert_eq!(result["resultType"], "task", "{reply}");
    result["taskId"].as_str().expect("a task id").to_owned()
}

/// `tasks/get` of `id`: its result.
async fn task(travel: &Travel, client: &McpClient, id: &str) -> Value {
    let params = json!({"taskId": id, "_meta": task_meta()});
    let reply = client.request(&travel.mcp(), "tasks/get", params).await.expect("tasks/get");
    reply.get("result").cloned().unwrap_or_else(|| panic!("tasks/get answered {reply}"))
}

/// Two `group_booking` tasks, one mid-work and one waiting on its question, through a kill: each
/// ends `failed` with a message saying its server stopped.
async fn group_booking_through_a_crash(travel: &mut Travel) {
    let client = McpClient::new(Duration::from_secs(30));
    let working = start_group_booking(travel, &client, 20).await;
    let asking = start_group_booking(travel, &client, 1).await;
    wait::until_async(Duration::from_secs(30), "the long task to report progress", || async {
        task(travel, &client, &working).await["statusMessage"].as_str().is_some_and(|m| m.starts_with("checked"))
    })
    .await;
    wait::until_async(Duration::from_secs(30), "the short task to ask for a departure", || async {
        task(travel, &client, &asking).await["status"] == "input_required"
    })
    .await;

    travel.crash_and_restart();
    for id in [&working, &asking] {
        wait::until_async(HEALED, "the dead process's task to end", || async {
            let status = task(travel, &client, id).await;
            match status["status"].as_str() {
                Some("working" | "input_required") => false,
                Some("failed") => {
                    let message = status["error"]["message"].as_str().unwrap_or_default();
                    assert!(message.contains("stopped"), "a failed task without a clear reason: {status}");
                    true
                }
                _ => panic!("a task of the dead process read {status}"),
            }
        })
        .await;
    }
}

async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST_BOUND, test).await.expect("the test finished within its bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_and_group_booking_survive_kills_on_the_sqlite_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("travel-server.db");
    let store = format!("sqlite:{}", file.display());
    bounded(async {
        let mut travel = Travel::start(&store);
        // A second process on the same file is refused, saying why; the first one serves on.
        let mut second = Command::new(travel_server_bin());
        second.args(["--listen", "127.0.0.1:0", "--store", &store]).env("ELICIT_STATE_KEYS", STATE_KEYS);
        let run = cli::run(second, "a second travel-server on the same file", Duration::from_secs(30));
        assert!(!run.status.success(), "a second process opened the store");
        assert!(run.stderr.contains("in use by another process"), "{}", run.stderr);

        book_trip_through_crashes(&mut travel).await;
        group_booking_through_a_crash(&mut travel).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_trip_and_group_booking_survive_kills_on_redis() {
    let Some(redis) = Redis::start_or_skip("book_trip_and_group_booking_survive_kills_on_redis", None) else {
        return;
    };
    bounded(async {
        let mut travel = Travel::start(&redis.url());
        book_trip_through_crashes(&mut travel).await;
        group_booking_through_a_crash(&mut travel).await;
    })
    .await;
}

/// Why the default changed: on the in-process store a kill between the page's approval and the
/// client's retry loses the approval, and the retry is asked to pay again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_store_forgets_the_approval_when_the_process_dies() {
    bounded(async {
        let mut travel = Travel::start("memory");
        let client = McpClient::new(Duration::from_secs(30));
        let first = client.call_tool(&travel.mcp(), "book_trip", None, None).await.expect("book_trip");
        let (_, s0) = asked(&first, "trip");
        let (requests, s1) = asked(&round(&travel, &client, &trip(), s0.as_deref()).await, "payment");
        let step = payment_id(&requests);
        client.approve_payment(&travel.page(&step)).await.expect("the page takes the approval");
        travel.crash_and_restart();
        let reply = round(&travel, &client, &consent(), s1.as_deref()).await;
        // Asked for the payment again: the step is pending anew, the person's approval is gone.
        let (again, _) = asked(&reply, "payment");
        assert_eq!(payment_id(&again), step);
    })
    .await;
}
