use super::*;

fn blob(len: usize) -> Blob {
    Blob {
        mime_type: "image/png".into(),
        base64: "A".repeat(len).into(),
    }
}

fn store(shelf_bytes: usize, total_bytes: usize) -> Arc<Store> {
    Store::new(KeepLimits {
        ttl: Duration::from_secs(60),
        shelf_bytes,
        total_bytes,
    })
}

#[tokio::test]
async fn a_kept_item_reads_back_on_its_own_shelf_only() {
    let store = store(1000, 1000);
    let (mine, theirs) = (store.shelf(), store.shelf());
    let uri = mine.keep(blob(8)).unwrap();
    assert!(uri.starts_with(URI_PREFIX), "{uri}");
    assert_eq!(mine.read(&uri), Some(blob(8)));
    assert_eq!(theirs.read(&uri), None, "another session's shelf");
    assert_eq!(mine.read("mcpw://results/nothing"), None);
    assert_eq!(mine.read("file:///etc/passwd"), None);
    let other = mine.keep(blob(8)).unwrap();
    assert_ne!(uri, other, "each item its own id");
}

#[tokio::test(start_paused = true)]
async fn items_expire_after_the_ttl() {
    let store = store(1000, 1000);
    let shelf = store.shelf();
    let uri = shelf.keep(blob(8)).unwrap();
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(shelf.read(&uri).is_some(), "still within the TTL");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(shelf.read(&uri), None);
    assert_eq!(store.held(), 0, "its bytes are released");
}

#[tokio::test]
async fn past_the_shelf_cap_the_oldest_go_first() {
    let store = store(100, 1000);
    let shelf = store.shelf();
    let first = shelf.keep(blob(40)).unwrap();
    let second = shelf.keep(blob(40)).unwrap();
    let third = shelf.keep(blob(40)).unwrap();
    assert_eq!(shelf.read(&first), None, "evicted");
    assert!(shelf.read(&second).is_some() && shelf.read(&third).is_some());
    assert_eq!(store.held(), 80);
    assert_eq!(shelf.keep(blob(101)), None, "bigger than a shelf holds");
    assert_eq!(shelf.len(), 2, "a refused item evicts nothing");
}

#[tokio::test]
async fn the_process_cap_holds_across_shelves_and_frees_with_a_session() {
    let store = store(100, 150);
    let (a, b) = (store.shelf(), store.shelf());
    let kept_by_a = a.keep(blob(100)).unwrap();
    let uri = b.keep(blob(50)).unwrap();
    assert_eq!(b.keep(blob(60)), None, "a's items are not b's to evict");
    assert!(b.read(&uri).is_some(), "a refused item evicts nothing");
    assert!(a.read(&kept_by_a).is_some());
    drop(a);
    assert_eq!(store.held(), 50, "b's item alone");
    assert!(
        b.keep(blob(100)).is_some(),
        "room again once a's session ended"
    );
}

#[test]
fn a_blob_knows_its_decoded_size() {
    let b = |s: &str| Blob {
        mime_type: String::new(),
        base64: s.into(),
    };
    assert_eq!(b("AAAA").bytes(), 3);
    assert_eq!(b("AAA=").bytes(), 2);
    assert_eq!(b("AA==").bytes(), 1);
    assert_eq!(b("").bytes(), 0);
}
