//! Issue 12 point 3, the Redis half: `RedisStore` holds at most `max_records` live records, counted
//! in Redis so every instance on one prefix shares the cap. A real `redis-server`: the fourth URL
//! record and a new flow record are refused with the clear "full" error; one taken, released or
//! expired makes room again; a record that exists already is never refused; another prefix has
//! its own count; and afterwards every key the store wrote carries a TTL.
//!
//! Without `redis-server` the test is skipped with a message, except under `CI`.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::process::Command;
use std::time::Duration;

use elicit_runtime::server::{CompletionStore, Finish, OnceClaim, RedisStore, StoreError, UrlStatus};
use elicit_tests::redis::Redis;
use serde_json::json;

/// Bound on the test, so a hang fails instead of stalling the suite.
const TEST_BOUND: Duration = Duration::from_secs(60);
const LONG: Duration = Duration::from_secs(60);

async fn store(redis: &Redis, prefix: &str, cap: usize) -> RedisStore {
    RedisStore::builder(redis.url()).key_prefix(prefix).max_records(cap).connect().await.unwrap()
}

fn assert_full<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    let error = result.expect_err(what);
    assert!(
        error.to_string().contains("full: 3 live records (the configured cap); try again later"),
        "{what}: {error}"
    );
}

/// `redis-cli` against the test server, one command; its output, trimmed.
fn cli(redis: &Redis, args: &[&str]) -> String {
    let output =
        Command::new("redis-cli").arg("-p").arg(redis.port.to_string()).args(args).output().expect("redis-cli runs");
    assert!(output.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Polls (bounded by the test's bound) until `id` is gone from the store.
async fn gone(store: &RedisStore, id: &str) {
    while store.status(id).await.unwrap() != UrlStatus::Unknown {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_live_record_cap_is_shared_by_instances_and_every_key_keeps_a_ttl() {
    let Some(redis) = Redis::start_or_skip("redis_cap", None) else { return };
    tokio::time::timeout(TEST_BOUND, async {
        let a = store(&redis, "cap", 3).await;
        let b = store(&redis, "cap", 3).await;

        // Three records from two instances fill the shared cap.
        a.register("u1", LONG, None).await.unwrap();
        b.register("u2", LONG, Some("alice")).await.unwrap();
        assert_eq!(a.claim_once("f1", "o:pay", LONG).await.unwrap(), OnceClaim::Run);
        assert_full(b.register("u3", LONG, None).await, "a fourth URL record on the other instance");
        assert_full(a.register("u3", LONG, None).await, "a fourth URL record");
        assert_full(b.claim_once("f2", "o:pay", LONG).await, "a new flow record (claim)");
        assert_full(a.finish("f2", json!({"done": true}), &[], LONG).await, "a new flow record (finish)");
        assert_full(b.record_once("f2", "o:pay", json!(1), LONG).await, "a new flow record (record)");
        // Records that exist already are still written: the cap refuses new records only.
        a.register("u1", LONG, None).await.unwrap();
        b.record_once("f1", "o:pay", json!(42), LONG).await.unwrap();
        assert_eq!(a.claim_once("f1", "o:pay", LONG).await.unwrap(), OnceClaim::Done(json!(42)));
        assert_eq!(b.finish("f1", json!({"ok": 1}), &["o:pay".to_owned()], LONG).await.unwrap(), Finish::Recorded);
        // Another prefix has a count of its own.
        let other = store(&redis, "other", 3).await;
        other.register("u1", LONG, None).await.unwrap();

        // A completion taken on one instance makes room on the other.
        assert!(a.complete("u2", json!({"paid": true}), Some("alice")).await.unwrap());
        assert_eq!(b.take("u2", Duration::ZERO).await.unwrap(), UrlStatus::Completed(json!({"paid": true})));
        b.register("u3", LONG, None).await.unwrap();
        assert_full(a.register("u4", LONG, None).await, "full again after the take's room was used");

        // An expired record makes room: u1 re-registered with a short life, then gone.
        a.register("u1", Duration::from_millis(150), None).await.unwrap();
        gone(&a, "u1").await;
        assert_eq!(b.claim_once("f2", "o:pay", LONG).await.unwrap(), OnceClaim::Run);
        assert_full(a.register("u4", LONG, None).await, "full again after the expiry's room was used");

        // A released record makes room.
        b.release("u3");
        gone(&a, "u3").await;
        a.register("u4", LONG, None).await.unwrap();
        assert_full(b.register("u5", LONG, None).await, "full again after the release's room was used");

        // Every key either store wrote carries a TTL, the live set included.
        let keys = cli(&redis, &["--scan", "--pattern", "*"]);
        let keys: Vec<&str> = keys.lines().collect();
        for expected in ["cap:live", "cap:flow:f1", "cap:flow:f2", "cap:url:u4", "other:live", "other:url:u1"] {
            assert!(keys.contains(&expected), "{expected} missing from {keys:?}");
        }
        for key in &keys {
            let pttl: i64 = cli(&redis, &["PTTL", key]).parse().unwrap();
            assert!(pttl > 0, "{key} has PTTL {pttl}");
        }
        // The live set counts exactly the live records: f1, f2, u4.
        assert_eq!(cli(&redis, &["ZCARD", "cap:live"]), "3");
    })
    .await
    .expect("the test finished within its bound");
}
