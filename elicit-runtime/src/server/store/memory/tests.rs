//! The in-process store: expiry, the index of deadlines, flow ids held inline.

use super::*;
use crate::server::clock::ManualClock;

#[tokio::test]
async fn expired_records_are_swept_a_few_per_operation() {
    let clock = ManualClock::new();
    let store = InProcessStore::new().clock(Arc::new(clock.clone()));
    for i in 0..200 {
        store.register(&format!("old-{i}"), Duration::from_millis(1), None).await.unwrap();
    }
    clock.advance(Duration::from_millis(5));
    store.register("new", Duration::from_secs(60), None).await.unwrap();
    // One operation swept at most its budget, not everything.
    assert_eq!(store.len(), 201 - SWEEP_BUDGET);
    for _ in 0..10 {
        store.status("new").await.unwrap();
    }
    assert_eq!(store.len(), 1, "every expired record is gone after a few operations");
    assert_eq!(store.status("old-3").await.unwrap(), UrlStatus::Unknown);
}

#[tokio::test]
async fn an_extended_record_outlives_its_first_deadline_and_goes_at_its_last() {
    let clock = ManualClock::new();
    let store = InProcessStore::new().clock(Arc::new(clock.clone()));
    let answers = RawValue::from_string(r#"{"a":1}"#.to_owned()).unwrap();
    let flow = ClaimToken::mint();
    let flow = flow.as_str();
    store.finish(flow, &FlowOwner::Anonymous, &answers, &[], Duration::from_secs(10)).await.unwrap();
    store.extend(flow, Duration::from_secs(60)).await.unwrap();
    // Past the first deadline: its entry came due, the record is live, so it stays.
    clock.advance(Duration::from_secs(30));
    store.register("step", Duration::from_secs(600), None).await.unwrap();
    assert_eq!(store.finished(flow).await.unwrap(), Some(serde_json::json!({"a": 1})));
    assert_eq!(store.len(), 2);
    // Past the extended one: swept.
    clock.advance(Duration::from_secs(31));
    store.status("step").await.unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(store.finished(flow).await.unwrap(), None);
}

#[tokio::test]
async fn records_removed_early_leave_the_index_of_deadlines_bounded() {
    // A client may start flows whose empty claims are abandoned, or a page register and take
    // steps, as fast as it likes: each record goes before its deadline, and the index must
    // not keep an entry for each of them for the records' whole life.
    let store = InProcessStore::new();
    let (owner, slot) = (FlowOwner::Anonymous, Slot::Once("k".to_owned()));
    let (lease, ttl) = (Duration::from_secs(30), Duration::from_secs(960));
    let keep = ClaimToken::mint();
    store.claim(keep.as_str(), &owner, &slot, &keep, lease, ttl).await.unwrap();
    let mut most = 0;
    for _ in 0..5_000 {
        let (flow, token) = (ClaimToken::mint(), ClaimToken::mint());
        assert!(matches!(store.claim(flow.as_str(), &owner, &slot, &token, lease, ttl).await.unwrap(), Claim::Run));
        store.abandon(flow.as_str(), &slot, &token).await.unwrap();
        store.register("pay", ttl, None).await.unwrap();
        store.complete("pay", serde_json::json!(true), None).await.unwrap();
        assert!(matches!(store.take("pay", Duration::ZERO).await.unwrap(), UrlStatus::Completed(_)));
        most = most.max(store.lock().deadlines.len());
    }
    assert_eq!(store.len(), 1, "only the kept claim's record is left");
    assert!(most <= 2 * 2 + deadlines::SLACK + 2, "the index grew to {most} entries for at most 2 records");
    let other = ClaimToken::mint();
    assert!(matches!(store.claim(keep.as_str(), &owner, &slot, &other, lease, ttl).await.unwrap(), Claim::Busy));
}

#[tokio::test]
async fn minted_flow_ids_are_held_inline_and_no_two_ids_share_a_record() {
    let minted = ClaimToken::mint();
    assert!(matches!(FlowKey::of(minted.as_str()), FlowKey::Minted(_)));
    // 22 characters carry 132 bits, 4 more than 16 bytes: an id whose last character sets
    // them is not one the engine mints, and must not read another flow's record.
    let (zero, trailing) = ("A".repeat(22), format!("{}B", "A".repeat(21)));
    assert!(matches!(FlowKey::of(&zero), FlowKey::Minted(_)));
    assert!(matches!(FlowKey::of(&trailing), FlowKey::Named(_)));
    assert!(matches!(FlowKey::of("f"), FlowKey::Named(_)));

    let store = InProcessStore::new();
    let answers = RawValue::from_string(r#"{"a":1}"#.to_owned()).unwrap();
    for id in [zero.as_str(), minted.as_str()] {
        assert_eq!(
            store.finish(id, &FlowOwner::Anonymous, &answers, &[], Duration::from_secs(60)).await.unwrap(),
            Finish::Recorded
        );
        assert_eq!(store.finished(id).await.unwrap(), Some(serde_json::json!({"a": 1})));
    }
    assert_eq!(store.finished(&trailing).await.unwrap(), None);
    assert_eq!(
        store.finish(&trailing, &FlowOwner::Anonymous, &answers, &[], Duration::from_secs(60)).await.unwrap(),
        Finish::Recorded
    );
    assert_eq!(store.len(), 3);
}

/// What the table holds for every live flow (its key and record) stays small: under load the
/// table is most of the store, and a record without slots spends one word on them.
#[test]
fn a_flow_in_the_table_takes_at_most_88_bytes() {
    let entry = std::mem::size_of::<(FlowKey, Record<FlowRecord>)>();
    assert!(entry <= 88, "a flow's key and record take {entry} bytes");
    assert!(std::mem::size_of::<super::flow::Slots>() <= 8);
}
