//! The Tasks extension, server half, through the engine: a handler run as a task, its asks
//! answered through `tasks/update`, re-asks under new keys, cancellation mid-work and mid-ask,
//! the caps on live tasks, and — on a real redis-server shared by two engines — a task answered
//! and cancelled on the instance that does not run it, `once` never repeated across polls,
//! updates and instances, and an instance that dies with its task in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elicit_runtime::server::{Answer, Engine, EngineBuilder, EngineError, Flow, FlowError, Request};

use elicit_runtime::server::store::{RedisStore, Store, TaskRecords};

use elicit_runtime::server::task::{TaskSnapshot, TaskStart, TaskStatus, TaskSupport};
use elicit_runtime::state::KeyRing;
use elicit_test_support::redis::Redis;
use elicit_test_support::server::engine::{Name, meta};
use serde_json::{Value, json};

fn task_meta() -> serde_json::Map<String, Value> {
    meta(json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}))
}

/// Polls `tasks/get` until `done` holds (at most 10 s), returning that snapshot.
async fn wait_for(
    engine: &Engine,
    id: &str,
    principal: Option<&str>,
    done: impl Fn(&TaskSnapshot) -> bool,
) -> TaskSnapshot {
    for _ in 0..200 {
        let snapshot = engine.task_get(id, principal).await.unwrap();
        if done(&snapshot) {
            return snapshot;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never reached the expected state: {:?}", engine.task_get(id, principal).await);
}

/// A booking: starts its long work, charges once, then asks who travels.
async fn booking(flow: Flow, charges: Arc<AtomicUsize>) -> Result<String, FlowError> {
    flow.background().await;
    let charge =
        flow.once("charge", || async { Ok::<_, FlowError>(charges.fetch_add(1, Ordering::SeqCst) + 1) }).await?;
    Ok(match flow.form::<Name>("who").await? {
        Answer::Accepted(who) => format!("Booked for {} (charge #{charge})", who.name),
        Answer::Declined | Answer::Cancelled => format!("Not booked (charge #{charge})"),
    })
}

async fn start(
    engine: &Engine,
    principal: Option<&str>,
    charges: &Arc<AtomicUsize>,
) -> Result<TaskSnapshot, EngineError> {
    let meta = task_meta();
    let request = Request::new("tools/call", "book").meta(Some(&meta)).principal(principal);
    let charges = charges.clone();
    match engine.run_task(&request, TaskSupport::Optional, move |flow| booking(flow, charges)).await? {
        TaskStart::Task(seed) => Ok(*seed),
        other => panic!("not a task: {other:?}"),
    }
}

fn local_engine(settings: impl FnOnce(EngineBuilder) -> EngineBuilder) -> Engine {
    settings(Engine::builder("tasks", KeyRing::generate())).build()
}

#[tokio::test]
async fn a_task_asks_through_its_input_requests_and_completes_on_update() {
    let engine = local_engine(|engine| engine);
    let charges = Arc::new(AtomicUsize::new(0));
    let seed = start(&engine, None, &charges).await.unwrap();
    assert_eq!(seed.status, TaskStatus::Working);
    let asked = wait_for(&engine, &seed.task_id, None, |t| t.status == TaskStatus::InputRequired).await;
    assert_eq!(asked.input_requests.keys().collect::<Vec<_>>(), ["who"]);
    assert_eq!(asked.input_requests["who"].to_json().unwrap()["method"], "elicitation/create");
    // Polls and an unknown key change nothing.
    for _ in 0..3 {
        engine.task_get(&seed.task_id, None).await.unwrap();
    }
    engine.task_update(&seed.task_id, None, Some(&json!({"nobody": {"action": "accept"}}))).await.unwrap();
    // A wrong answer is asked again under a new key, its errors named.
    engine
        .task_update(&seed.task_id, None, Some(&json!({"who": {"action": "accept", "content": {"name": 7}}})))
        .await
        .unwrap();
    let again = wait_for(&engine, &seed.task_id, None, |t| t.input_requests.contains_key("who#2")).await;
    assert!(!again.input_requests.contains_key("who"), "an answered key is never asked again: {again:?}");
    let message = again.input_requests["who#2"].to_json().unwrap()["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("Please correct"), "{message}");
    // A late answer to the old key is ignored.
    engine
        .task_update(&seed.task_id, None, Some(&json!({"who": {"action": "accept", "content": {"name": "Eve"}}})))
        .await
        .unwrap();
    engine
        .task_update(&seed.task_id, None, Some(&json!({"who#2": {"action": "accept", "content": {"name": "Ada"}}})))
        .await
        .unwrap();
    let done = wait_for(&engine, &seed.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.outcome.as_ref().unwrap().to_json().unwrap(), json!("Booked for Ada (charge #1)"));
    assert_eq!(charges.load(Ordering::SeqCst), 1);
    // A terminal task is still answered, and cancel is acknowledged.
    engine.task_cancel(&seed.task_id, None).await.unwrap();
    assert_eq!(engine.task_get(&seed.task_id, None).await.unwrap().status, TaskStatus::Completed);
}

#[tokio::test]
async fn tasks_are_the_principals_own_and_unknown_ids_are_invalid_params() {
    let engine = local_engine(|engine| engine);
    let charges = Arc::new(AtomicUsize::new(0));
    let seed = start(&engine, Some("alice"), &charges).await.unwrap();
    for principal in [None, Some("mallory")] {
        let error = engine.task_get(&seed.task_id, principal).await.unwrap_err();
        assert_eq!(error.code, -32602, "{error}");
        assert_eq!(engine.task_cancel(&seed.task_id, principal).await.unwrap_err().code, -32602);
    }
    assert_eq!(engine.task_get("no-such-task", Some("alice")).await.unwrap_err().code, -32602);
    engine.task_cancel(&seed.task_id, Some("alice")).await.unwrap();
}

/// Works until cancelled, counting what it saw.
async fn long_work(flow: Flow, saw_cancel: Arc<AtomicUsize>) -> Result<String, FlowError> {
    flow.background().await;
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(600)) => Ok("finished".to_owned()),
        () = flow.cancelled() => {
            saw_cancel.fetch_add(1, Ordering::SeqCst);
            Ok("stopped".to_owned())
        }
    }
}

/// Starts [`long_work`] as a task, counting in `saw` whether it saw `tasks/cancel`.
async fn start_long_work(engine: &Engine, saw: Arc<AtomicUsize>) -> Box<TaskSnapshot> {
    let meta = task_meta();
    let request = Request::new("tools/call", "work").meta(Some(&meta));
    let TaskStart::Task(seed) =
        engine.run_task(&request, TaskSupport::Optional, move |flow| long_work(flow, saw)).await.unwrap()
    else {
        panic!("not a task")
    };
    seed
}

/// Cancels [`long_work`] mid-work on `engine`: the task ends cancelled and the handler saw it.
async fn cancel_mid_work(engine: &Engine) {
    let saw = Arc::new(AtomicUsize::new(0));
    let seed = start_long_work(engine, saw.clone()).await;
    engine.task_cancel(&seed.task_id, None).await.unwrap();
    let done = wait_for(engine, &seed.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
    assert_eq!(saw.load(Ordering::SeqCst), 1, "the handler saw flow.cancelled()");
}

#[tokio::test]
async fn cancel_mid_work_is_seen_by_the_handler_and_ends_cancelled() {
    cancel_mid_work(&local_engine(|engine| engine)).await;
}

/// The instance running a task renews its lease while the handler works, and ends the task
/// `failed` once the handler outlives the task's time-to-live (the record, read from the store
/// itself: `tasks/get` says only that an expired task expired).
#[tokio::test]
async fn a_running_task_renews_its_lease_and_ends_at_its_time_to_live() {
    let engine = local_engine(|engine| engine.task_lease(Duration::from_millis(300)).task_ttl(Duration::from_secs(1)));
    let saw = Arc::new(AtomicUsize::new(0));
    let seed = start_long_work(&engine, saw.clone()).await;
    let records = engine.task_records().clone();
    let load = || async { records.load(&seed.task_id).await.unwrap().unwrap().record };
    let first = load().await;
    let (mut renewed, mut ended) = (false, None);
    for _ in 0..500 {
        let record = load().await;
        if record.status.is_terminal() {
            ended = Some(record);
            break;
        }
        renewed |= record.lease_until_ms > first.lease_until_ms;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(renewed, "the lease was renewed while the handler worked");
    let ended = ended.expect("the task ended at its time-to-live");
    assert_eq!(ended.status, TaskStatus::Failed, "{ended:?}");
    assert!(format!("{:?}", ended.outcome).contains("outlived its time-to-live"), "{ended:?}");
    assert_eq!(saw.load(Ordering::SeqCst), 0, "not cancelled");
}

/// The in-process store tells a waiting task of every answer and cancel request, so the task
/// never rereads its record on a timer: with a recheck of an hour, an answer still completes the
/// ask and `tasks/cancel` still reaches `flow.cancelled()`.
#[tokio::test]
async fn a_store_that_watches_needs_no_recheck() {
    let engine = local_engine(|engine| engine.task_recheck(Duration::from_secs(3600)));
    let charges = Arc::new(AtomicUsize::new(0));
    let seed = start(&engine, None, &charges).await.unwrap();
    wait_for(&engine, &seed.task_id, None, |t| t.status == TaskStatus::InputRequired).await;
    let answer = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    engine.task_update(&seed.task_id, None, Some(&answer)).await.unwrap();
    let done = wait_for(&engine, &seed.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.outcome.as_ref().unwrap().to_json().unwrap(), json!("Booked for Ada (charge #1)"), "{done:?}");
    cancel_mid_work(&engine).await;
}

#[tokio::test]
async fn cancel_mid_ask_ends_cancelled_and_later_answers_are_ignored() {
    let engine = local_engine(|engine| engine);
    let charges = Arc::new(AtomicUsize::new(0));
    let seed = start(&engine, None, &charges).await.unwrap();
    wait_for(&engine, &seed.task_id, None, |t| t.status == TaskStatus::InputRequired).await;
    engine.task_cancel(&seed.task_id, None).await.unwrap();
    let done = wait_for(&engine, &seed.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
    assert!(done.input_requests.is_empty());
    engine
        .task_update(&seed.task_id, None, Some(&json!({"who": {"action": "accept", "content": {"name": "Ada"}}})))
        .await
        .unwrap();
    assert_eq!(engine.task_get(&seed.task_id, None).await.unwrap().status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn live_tasks_are_capped_per_principal_and_in_total_with_a_clear_error() {
    let engine = local_engine(|engine| engine.max_live_tasks(3).max_live_tasks_per_principal(2));
    let charges = Arc::new(AtomicUsize::new(0));
    let a1 = start(&engine, Some("alice"), &charges).await.unwrap();
    start(&engine, Some("alice"), &charges).await.unwrap();
    let error = start(&engine, Some("alice"), &charges).await.unwrap_err();
    assert_eq!(error.code, -32603);
    assert!(error.message.contains("this user runs 2 tasks"), "{error}");
    start(&engine, Some("bob"), &charges).await.unwrap();
    let error = start(&engine, Some("carol"), &charges).await.unwrap_err();
    assert!(error.message.contains("the server runs 3 tasks"), "{error}");
    // A task that ends frees its place.
    engine.task_cancel(&a1.task_id, Some("alice")).await.unwrap();
    wait_for(&engine, &a1.task_id, Some("alice"), |t| t.status.is_terminal()).await;
    start(&engine, Some("carol"), &charges).await.unwrap();
}

#[tokio::test]
async fn a_flow_that_asks_first_is_a_multi_round_call_until_its_long_work() {
    let engine = local_engine(|engine| engine);
    let meta = task_meta();
    let runs = Arc::new(AtomicUsize::new(0));
    let handler = |runs: Arc<AtomicUsize>| {
        move |flow: Flow| async move {
            let who = match flow.form::<Name>("who").await? {
                Answer::Accepted(who) => who.name,
                _ => "nobody".to_owned(),
            };
            flow.background().await;
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, FlowError>(format!("Hello, {who}!"))
        }
    };
    let request = Request::new("tools/call", "greet").meta(Some(&meta));
    let TaskStart::InputRequired(asked) =
        engine.run_task(&request, TaskSupport::Optional, handler(runs.clone())).await.unwrap()
    else {
        panic!("round 1 is a Multi Round-Trip round")
    };
    let answer = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = request.input_responses(Some(&answer)).request_state(asked.request_state.as_deref());
    let TaskStart::Task(first) = engine.run_task(&retry, TaskSupport::Optional, handler(runs.clone())).await.unwrap()
    else {
        panic!("round 2 becomes a task")
    };
    // The same last round retried finds the same task; the work after the task point ran once.
    let TaskStart::Task(second) = engine.run_task(&retry, TaskSupport::Optional, handler(runs.clone())).await.unwrap()
    else {
        panic!("a retried round finds its task")
    };
    assert_eq!(first.task_id, second.task_id);
    let done = wait_for(&engine, &first.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.outcome.as_ref().unwrap().to_json().unwrap(), json!("Hello, Ada!"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Two engines sharing one Redis (store and task records), as two instances behind a balancer.
async fn pair(redis: &Redis, settings: impl Fn(EngineBuilder) -> EngineBuilder) -> (Engine, Engine) {
    let keys = KeyRing::generate();
    let mut engines = Vec::new();
    for _ in 0..2 {
        let store = Arc::new(RedisStore::builder(redis.url()).key_prefix("tasks").connect().await.unwrap());
        let tasks: Arc<dyn TaskRecords> = store.clone();
        let store: Arc<dyn Store> = store;
        engines.push(settings(Engine::builder("tasks", keys.clone()).store(store).tasks(tasks)).build());
    }
    let b = engines.pop().unwrap();
    (engines.pop().unwrap(), b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_answered_and_cancelled_on_the_instance_that_does_not_run_it() {
    let Some(redis) =
        Redis::start_or_skip("a_task_is_answered_and_cancelled_on_the_instance_that_does_not_run_it", None)
    else {
        return;
    };
    let (a, b) = pair(&redis, |engine| engine).await;
    let charges = Arc::new(AtomicUsize::new(0));
    let seed = start(&a, Some("alice"), &charges).await.unwrap();
    // Durable creation: the other instance finds it at once.
    b.task_get(&seed.task_id, Some("alice")).await.unwrap();
    let asked = wait_for(&b, &seed.task_id, Some("alice"), |t| t.status == TaskStatus::InputRequired).await;
    assert!(asked.input_requests.contains_key("who"));
    for _ in 0..3 {
        a.task_get(&seed.task_id, Some("alice")).await.unwrap();
        b.task_get(&seed.task_id, Some("alice")).await.unwrap();
    }
    b.task_update(
        &seed.task_id,
        Some("alice"),
        Some(&json!({"who": {"action": "accept", "content": {"name": "Ada"}}})),
    )
    .await
    .unwrap();
    // The answered key is gone at once, on either instance.
    assert!(!a.task_get(&seed.task_id, Some("alice")).await.unwrap().input_requests.contains_key("who"));
    let done = wait_for(&a, &seed.task_id, Some("alice"), |t| t.status.is_terminal()).await;
    assert_eq!(done.outcome.as_ref().unwrap().to_json().unwrap(), json!("Booked for Ada (charge #1)"));
    assert_eq!(charges.load(Ordering::SeqCst), 1, "once ran once across polls, updates and instances");

    let second = start(&a, Some("alice"), &charges).await.unwrap();
    wait_for(&b, &second.task_id, Some("alice"), |t| t.status == TaskStatus::InputRequired).await;
    b.task_cancel(&second.task_id, Some("alice")).await.unwrap();
    let done = wait_for(&a, &second.task_id, Some("alice"), |t| t.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caps_hold_across_instances() {
    let Some(redis) = Redis::start_or_skip("the_caps_hold_across_instances", None) else { return };
    let (a, b) = pair(&redis, |engine| engine.max_live_tasks(2).max_live_tasks_per_principal(1)).await;
    let charges = Arc::new(AtomicUsize::new(0));
    start(&a, Some("alice"), &charges).await.unwrap();
    let error = start(&b, Some("alice"), &charges).await.unwrap_err();
    assert!(error.message.contains("this user runs 1 tasks"), "{error}");
    start(&b, Some("bob"), &charges).await.unwrap();
    let error = start(&a, Some("carol"), &charges).await.unwrap_err();
    assert!(error.message.contains("the server runs 2 tasks"), "{error}");
}

#[test]
fn an_instance_that_dies_leaves_its_task_failed_after_its_lease() {
    let Some(redis) = Redis::start_or_skip("an_instance_that_dies_leaves_its_task_failed_after_its_lease", None) else {
        return;
    };
    let config = |engine: EngineBuilder| engine.task_lease(Duration::from_secs(1));
    // Instance A runs on a runtime of its own, shut down with the task in flight.
    let doomed = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let survivor = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (a, b) = survivor.block_on(pair(&redis, config));
    let a = Arc::new(a);
    let saw = Arc::new(AtomicUsize::new(0));
    let seed = {
        let (a, saw) = (a.clone(), saw.clone());
        doomed.block_on(async move {
            let meta = task_meta();
            let request = Request::new("tools/call", "work").meta(Some(&meta));
            match a.run_task(&request, TaskSupport::Optional, move |flow| long_work(flow, saw)).await.unwrap() {
                TaskStart::Task(seed) => *seed,
                other => panic!("not a task: {other:?}"),
            }
        })
    };
    survivor.block_on(async {
        assert_eq!(b.task_get(&seed.task_id, None).await.unwrap().status, TaskStatus::Working);
    });
    doomed.shutdown_background();
    let failed = survivor.block_on(wait_for(&b, &seed.task_id, None, |t| t.status.is_terminal()));
    assert_eq!(failed.status, TaskStatus::Failed);
    let error = failed.outcome.as_ref().unwrap().to_json().unwrap();
    assert_eq!(error["code"], -32603);
    assert!(error["message"].as_str().unwrap().contains("stopped"), "{error}");
    assert_eq!(saw.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn sampling_roots_and_url_mode_asks_become_input_requests_of_the_task() {
    let engine = local_engine(|engine| engine);
    let meta = meta(json!({"elicitation": {"url": {}}, "sampling": {}, "roots": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let request = Request::new("tools/call", "mixed").meta(Some(&meta));
    let handler = |flow: Flow| async move {
        flow.background().await;
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 5});
        let (sampled, roots) = tokio::join!(flow.sampling("summary", params), flow.roots("roots"));
        let paid = flow.url("pay", "Pay here", |id| format!("https://pay.example/{id}")).await?;
        Ok::<_, FlowError>(json!({
            "text": sampled?["content"]["text"],
            "roots": roots?["roots"].as_array().map_or(0, Vec::len),
            "paid": matches!(paid, elicit_runtime::server::UrlAnswer::Completed(_)),
        }))
    };
    let TaskStart::Task(seed) = engine.run_task(&request, TaskSupport::Optional, handler).await.unwrap() else {
        panic!("not a task")
    };
    let id = seed.task_id.clone();
    let both = wait_for(&engine, &id, None, |t| t.input_requests.len() == 2).await;
    assert_eq!(both.input_requests["summary"].to_json().unwrap()["method"], "sampling/createMessage");
    assert_eq!(both.input_requests["roots"].to_json().unwrap()["method"], "roots/list");
    let reply = json!({
        "summary": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Short."}},
        "roots": {"roots": [{"uri": "file:///home/ada"}]},
    });
    engine.task_update(&id, None, Some(&reply)).await.unwrap();
    let url = wait_for(&engine, &id, None, |t| t.input_requests.contains_key("pay")).await;
    let link = url.input_requests["pay"].to_json().unwrap()["params"]["url"].as_str().unwrap().to_owned();
    let step = link.rsplit('/').next().unwrap().to_owned();
    engine.task_update(&id, None, Some(&json!({"pay": {"action": "accept"}}))).await.unwrap();
    // The page records completion out of band; the handler, waiting inside the task, takes it.
    assert!(engine.url_completions().complete(&step, json!({"approved": true}), None).await.unwrap());
    let done = wait_for(&engine, &id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.outcome.as_ref().unwrap().to_json().unwrap(), json!({"text": "Short.", "roots": 1, "paid": true}));
}

#[tokio::test]
async fn a_required_capability_missing_fails_the_task_with_32021() {
    let engine = local_engine(|engine| engine);
    let meta = task_meta();
    let request = Request::new("tools/call", "sample").meta(Some(&meta));
    let handler = |flow: Flow| async move {
        flow.background().await;
        flow.sampling("s", json!({"messages": [], "maxTokens": 1})).await
    };
    let TaskStart::Task(seed) = engine.run_task(&request, TaskSupport::Optional, handler).await.unwrap() else {
        panic!("not a task")
    };
    let done = wait_for(&engine, &seed.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Failed);
    let error = done.outcome.as_ref().unwrap().to_json().unwrap();
    assert_eq!(error["code"], -32021);
    assert_eq!(error["data"]["requiredCapabilities"], json!({"sampling": {}}));
}

/// A task waiting for input has a deadline: unanswered, it fails with a clear message and frees
/// its place under the per-principal cap (before, 64 unanswered calls held every place for the
/// records' hour).
#[tokio::test]
async fn a_task_waiting_for_input_gives_up_at_its_deadline_and_frees_its_place() {
    let engine =
        local_engine(|engine| engine.max_live_tasks_per_principal(1).task_input_wait(Duration::from_millis(200)));
    let charges = Arc::new(AtomicUsize::new(0));
    let first = start(&engine, None, &charges).await.unwrap();
    wait_for(&engine, &first.task_id, None, |t| t.status == TaskStatus::InputRequired).await;
    let error = start(&engine, None, &charges).await.unwrap_err();
    assert!(error.message.contains("runs 1 task"), "{error}");
    let ended = wait_for(&engine, &first.task_id, None, |t| t.status.is_terminal()).await;
    assert_eq!(ended.status, TaskStatus::Failed, "{ended:?}");
    let why = format!("{:?} {:?}", ended.status_message, ended.outcome);
    assert!(why.contains("no answer to `who` came within"), "{why}");
    start(&engine, None, &charges).await.unwrap();
}

#[tokio::test]
async fn one_anonymous_client_cannot_take_every_place_anonymous_callers_share() {
    // Anonymous callers share one count of 3; each client (peer address) may hold 2 of it.
    let engine = local_engine(|engine| engine.max_live_tasks_per_principal(3).max_live_tasks_per_anonymous_client(2));
    let charges = Arc::new(AtomicUsize::new(0));
    let from = |client: &'static str| {
        let (engine, charges) = (&engine, charges.clone());
        async move {
            let meta = task_meta();
            let request = Request::new("tools/call", "book").meta(Some(&meta)).client(Some(client));
            match engine.run_task(&request, TaskSupport::Optional, move |flow| booking(flow, charges)).await {
                Ok(TaskStart::Task(seed)) => Ok(*seed),
                Ok(other) => panic!("not a task: {other:?}"),
                Err(error) => Err(error),
            }
        }
    };
    let first = from("192.0.2.1").await.unwrap();
    from("192.0.2.1").await.unwrap();
    let error = from("192.0.2.1").await.unwrap_err();
    assert!(error.message.contains("runs 2 tasks"), "{error}");
    // Another address still gets a task.
    from("192.0.2.2").await.unwrap();
    // The shared anonymous count still holds over all of them.
    let error = from("192.0.2.3").await.unwrap_err();
    assert!(error.message.contains("runs 3 tasks"), "{error}");
    // A task that ends gives its client's place back.
    engine.task_cancel(&first.task_id, None).await.unwrap();
    wait_for(&engine, &first.task_id, None, |t| t.status.is_terminal()).await;
    from("192.0.2.1").await.unwrap();
}
