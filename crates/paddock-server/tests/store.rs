//! One suite of store behaviour, run against both drivers: the embedded SQLite file and a
//! private PostgreSQL cluster (two store instances on one database = two replicas).

#![cfg(test)]

use std::sync::Arc;
use std::time::Duration;

use paddock_server::credential::CredentialHash;
use paddock_server::store::{
    self, ApiKeyRecord, DatabaseUrl, MIGRATIONS, MachineRecord, Pairing, Presence, ServerStore,
};
use paddock_testkit::PgCluster;

/// A deadline that only catches a hang.
const DEADLINE: Duration = Duration::from_secs(60);

fn hash(text: &str) -> CredentialHash {
    CredentialHash::of(text)
}

async fn open(url: &str) -> Arc<dyn ServerStore> {
    let url = DatabaseUrl::parse(url).unwrap_or_else(|error| panic!("{error}"));
    store::open(&url)
        .await
        .unwrap_or_else(|error| panic!("opening {}: {error}", url.display()))
}

async fn receive(receiver: &mut tokio::sync::mpsc::Receiver<String>) -> String {
    tokio::time::timeout(DEADLINE, receiver.recv())
        .await
        .unwrap_or_else(|_| panic!("no relayed body within {DEADLINE:?}"))
        .unwrap_or_else(|| panic!("the relay listener closed"))
}

/// The behaviour every driver shares. `a` and `b` are two instances on one database.
async fn store_suite(a: Arc<dyn ServerStore>, b: Arc<dyn ServerStore>) {
    let now = store::now_ms();

    // API keys.
    let record = |id: &str, name: &str| ApiKeyRecord {
        id: id.into(),
        name: name.into(),
        profile: "readonly".into(),
        created_at_ms: now,
        revoked_at_ms: None,
    };
    a.insert_api_key(record("key-1", "ci"), hash("pdk_sk_one"))
        .await
        .unwrap();
    let found = b.api_key(hash("pdk_sk_one")).await.unwrap().unwrap();
    assert_eq!(found, record("key-1", "ci"));
    assert!(b.api_key(hash("pdk_sk_unknown")).await.unwrap().is_none());
    let duplicate = b
        .insert_api_key(record("key-2", "ci"), hash("pdk_sk_two"))
        .await
        .unwrap_err();
    assert!(
        matches!(duplicate, store::StoreError::Duplicate { .. }),
        "{duplicate}"
    );
    let epoch = a.key_epoch().await.unwrap();
    assert!(b.revoke_api_key("key-1".into(), now + 1).await.unwrap());
    assert_eq!(
        a.key_epoch().await.unwrap(),
        epoch + 1,
        "a revocation moves the epoch every replica polls"
    );
    let revoked = a.api_key(hash("pdk_sk_one")).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at_ms, Some(now + 1));
    // The name is free again once its key is revoked; revoking by name works too.
    a.insert_api_key(record("key-2", "ci"), hash("pdk_sk_two"))
        .await
        .unwrap();
    assert!(a.revoke_api_key("ci".into(), now + 2).await.unwrap());
    assert!(!a.revoke_api_key("ci".into(), now + 3).await.unwrap());
    let keys = b.list_api_keys().await.unwrap();
    assert_eq!(keys.len(), 2);
    assert!(keys.iter().all(|key| key.revoked_at_ms.is_some()));

    // Pairing tokens: single use under concurrency, across both instances.
    let pairing = Pairing {
        name: Some("laptop".into()),
        reconnect_machine: None,
    };
    a.insert_pairing(hash("pdk_pt_one"), pairing.clone(), now, now + 600_000)
        .await
        .unwrap();
    let takers = (0..20).map(|index| {
        let store = if index % 2 == 0 { a.clone() } else { b.clone() };
        tokio::spawn(async move { store.take_pairing(hash("pdk_pt_one"), now + 1).await })
    });
    let mut winners = Vec::new();
    for taker in takers {
        if let Some(won) = taker.await.unwrap().unwrap() {
            winners.push(won);
        }
    }
    assert_eq!(winners, vec![pairing.clone()]);
    a.insert_pairing(hash("pdk_pt_expired"), pairing, now - 10, now)
        .await
        .unwrap();
    assert!(
        b.take_pairing(hash("pdk_pt_expired"), now + 1)
            .await
            .unwrap()
            .is_none()
    );

    // Machines.
    let machine = MachineRecord {
        id: "machine-1".into(),
        name: "laptop".into(),
        hostname: "laptop.local".into(),
        platform: "linux".into(),
        arch: "x86_64".into(),
        created_at_ms: now,
        revoked_at_ms: None,
    };
    a.insert_machine(machine.clone(), hash("pdk_mk_one"))
        .await
        .unwrap();
    assert_eq!(
        b.machine_by_key(hash("pdk_mk_one")).await.unwrap(),
        Some(machine.clone())
    );
    assert!(
        b.replace_machine_key("machine-1".into(), hash("pdk_mk_two"))
            .await
            .unwrap()
    );
    assert!(
        a.machine_by_key(hash("pdk_mk_one"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        a.machine_by_key(hash("pdk_mk_two")).await.unwrap(),
        Some(machine.clone())
    );
    assert_eq!(
        a.machine("machine-1".into()).await.unwrap(),
        Some(machine.clone())
    );
    assert!(
        !a.replace_machine_key("machine-none".into(), hash("pdk_mk_three"))
            .await
            .unwrap()
    );
    assert_eq!(b.list_machines().await.unwrap(), vec![machine]);

    // Runner keys.
    a.insert_runner_key(
        hash("pdk_rk_one"),
        "machine-1".into(),
        "agent-1".into(),
        now,
    )
    .await
    .unwrap();
    assert_eq!(
        b.runner_key(hash("pdk_rk_one")).await.unwrap(),
        Some(("machine-1".to_owned(), "agent-1".to_owned()))
    );
    assert!(b.runner_key(hash("pdk_rk_other")).await.unwrap().is_none());
    // A new key for the agent replaces the old ones; other agents keep theirs.
    a.insert_runner_key(
        hash("pdk_rk_else"),
        "machine-1".into(),
        "agent-2".into(),
        now,
    )
    .await
    .unwrap();
    assert_eq!(
        b.revoke_runner_keys("machine-1".into(), "agent-1".into(), now + 1)
            .await
            .unwrap(),
        1
    );
    assert!(a.runner_key(hash("pdk_rk_one")).await.unwrap().is_none());
    assert!(a.runner_key(hash("pdk_rk_else")).await.unwrap().is_some());

    // An agent's conversation: one numbering for both directions, replicas appending at once
    // never share a number, and the acknowledged boundary only moves up to the last message.
    let message = |inbound: bool, body: &str| store::AgentMessage {
        seq: 0,
        inbound,
        target: "/.dm/owner#fleet".into(),
        sender: if inbound { "owner-key" } else { "agent-1" }.into(),
        body: body.into(),
        created_at_ms: now,
    };
    let appenders = (0..10).map(|index| {
        let store = if index % 2 == 0 { a.clone() } else { b.clone() };
        let message = message(true, &format!("body {index}"));
        tokio::spawn(async move {
            store
                .append_agent_message("machine-1".into(), "agent-1".into(), message)
                .await
        })
    });
    let mut seqs = Vec::new();
    for appender in appenders {
        seqs.push(appender.await.unwrap().unwrap());
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=10).collect::<Vec<i64>>());
    let reply = b
        .append_agent_message(
            "machine-1".into(),
            "agent-1".into(),
            message(false, "a reply"),
        )
        .await
        .unwrap();
    assert_eq!(reply, 11);
    let inbound = a
        .agent_messages("machine-1".into(), "agent-1".into(), 8, true, 100)
        .await
        .unwrap();
    assert_eq!(
        inbound
            .iter()
            .map(|message| message.seq)
            .collect::<Vec<_>>(),
        vec![9, 10]
    );
    assert!(inbound.iter().all(|message| message.inbound));
    let all = b
        .agent_messages("machine-1".into(), "agent-1".into(), 9, false, 100)
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1], {
        let mut expected = message(false, "a reply");
        expected.seq = 11;
        expected
    });
    assert!(
        a.agent_messages("machine-1".into(), "agent-2".into(), 0, false, 100)
            .await
            .unwrap()
            .is_empty(),
        "another agent's conversation is its own"
    );
    assert_eq!(
        a.unacked_agents("machine-1".into()).await.unwrap(),
        vec![store::Unacked {
            agent_id: "agent-1".into(),
            count: 10,
            latest_seq: 10,
        }]
    );
    assert_eq!(
        b.agent_acked("machine-1".into(), "agent-1".into())
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        a.ack_agent("machine-1".into(), "agent-1".into(), 4)
            .await
            .unwrap(),
        4
    );
    assert_eq!(
        b.ack_agent("machine-1".into(), "agent-1".into(), 2)
            .await
            .unwrap(),
        4,
        "never down"
    );
    assert_eq!(
        a.unacked_agents("machine-1".into()).await.unwrap()[0].count,
        6
    );
    assert_eq!(
        b.ack_agent("machine-1".into(), "agent-1".into(), 99)
            .await
            .unwrap(),
        11,
        "never past the last message"
    );
    assert!(
        a.unacked_agents("machine-1".into())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        a.ack_agent("machine-1".into(), "agent-none".into(), 5)
            .await
            .unwrap(),
        0,
        "an agent with no messages has nothing to acknowledge"
    );

    // Presence: an upsert per machine.
    let presence = Presence {
        machine_id: "machine-1".into(),
        replica_id: "replica-a".into(),
        connected: true,
        inventory: "[]".into(),
        updated_at_ms: now,
    };
    a.set_presence(presence.clone()).await.unwrap();
    assert_eq!(b.presences().await.unwrap(), vec![presence.clone()]);
    let moved = Presence {
        replica_id: "replica-b".into(),
        connected: false,
        inventory: r#"[{"id":"web-1"}]"#.into(),
        updated_at_ms: now + 5,
        ..presence
    };
    b.set_presence(moved.clone()).await.unwrap();
    assert_eq!(a.presences().await.unwrap(), vec![moved]);

    // Leases: two concurrent callers (on two instances) never get the same device.
    let candidates: Vec<String> = ["dev-1", "dev-2", "dev-3"].map(String::from).to_vec();
    let until = now + 60_000;
    let (first, second) = tokio::join!(
        a.lease_device(candidates.clone(), "holder-a".into(), now, until),
        b.lease_device(candidates.clone(), "holder-b".into(), now, until),
    );
    let first = first.unwrap().unwrap();
    let second = second.unwrap().unwrap();
    assert_ne!(first, second);
    assert_eq!(
        b.lease_holder(first.clone(), now).await.unwrap().as_deref(),
        Some("holder-a")
    );
    assert_eq!(
        a.lease_holder(second.clone(), now)
            .await
            .unwrap()
            .as_deref(),
        Some("holder-b")
    );
    let third = a
        .lease_device(candidates.clone(), "holder-c".into(), now, until)
        .await
        .unwrap()
        .unwrap();
    assert!(third != first && third != second);
    assert!(
        b.lease_device(candidates.clone(), "holder-d".into(), now, until)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        !a.release_lease(first.clone(), "holder-b".into())
            .await
            .unwrap()
    );
    assert!(
        a.release_lease(first.clone(), "holder-a".into())
            .await
            .unwrap()
    );
    assert!(b.lease_holder(first.clone(), now).await.unwrap().is_none());
    assert_eq!(
        b.lease_device(candidates.clone(), "holder-d".into(), now, until)
            .await
            .unwrap(),
        Some(first)
    );
    // A lease past its end is free again.
    assert!(b.lease_holder(second, until).await.unwrap().is_none());
    assert!(
        a.lease_device(candidates, "holder-e".into(), until, until + 1)
            .await
            .unwrap()
            .is_some()
    );

    // The relay: posted on one instance, received by a listener on the other, in order,
    // bodies longer than a NOTIFY payload included.
    let mut listener = b.relay_listen("replica-b".into()).await.unwrap();
    let long = "x".repeat(20_000);
    for body in ["one", "two", long.as_str(), "three"] {
        a.relay_post("replica-b".into(), body.into()).await.unwrap();
    }
    assert_eq!(receive(&mut listener).await, "one");
    assert_eq!(receive(&mut listener).await, "two");
    assert_eq!(receive(&mut listener).await, long);
    assert_eq!(receive(&mut listener).await, "three");
    // Each once: the next body is the next one posted, not a repeat.
    a.relay_post("replica-b".into(), "four".into())
        .await
        .unwrap();
    assert_eq!(receive(&mut listener).await, "four");
    drop(listener);

    // Posted while nobody listened: delivered on listen, in order.
    a.relay_post("replica-late".into(), "early-1".into())
        .await
        .unwrap();
    a.relay_post("replica-late".into(), "early-2".into())
        .await
        .unwrap();
    let mut late = b.relay_listen("replica-late".into()).await.unwrap();
    assert_eq!(receive(&mut late).await, "early-1");
    assert_eq!(receive(&mut late).await, "early-2");
    b.relay_post("replica-late".into(), "live".into())
        .await
        .unwrap();
    assert_eq!(receive(&mut late).await, "live");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite:{}",
        dir.path().join("state/server.sqlite").display()
    );
    let a = open(&url).await;
    let b = open(&url).await;
    assert_eq!(a.kind(), "sqlite");
    store_suite(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_suite() {
    let cluster = PgCluster::start().unwrap_or_else(|error| panic!("{error:#}"));
    let a = open(&cluster.url()).await;
    let b = open(&cluster.url()).await;
    assert_eq!(a.kind(), "postgres");
    store_suite(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_migrations_run_once_when_two_open_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/server.sqlite");
    let url = format!("sqlite:{}", path.display());
    let (a, b) = tokio::join!(open(&url), open(&url));
    let again = open(&url).await;
    for store in [&a, &b, &again] {
        assert!(store.list_api_keys().await.unwrap().is_empty());
    }
    let connection = rusqlite::Connection::open(&path).unwrap();
    let versions: i64 = connection
        .query_row("SELECT COUNT(*) FROM schema_migrations", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(versions, i64::try_from(MIGRATIONS.len()).unwrap());
    let counters: i64 = connection
        .query_row("SELECT COUNT(*) FROM relay_counter", [], |row| row.get(0))
        .unwrap();
    assert_eq!(counters, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrations_run_once_when_two_replicas_start_at_once() {
    let cluster = PgCluster::start().unwrap_or_else(|error| panic!("{error:#}"));
    let url = cluster.create_database("fresh").unwrap();
    let (a, b, c) = tokio::join!(open(&url), open(&url), open(&url));
    for store in [&a, &b, &c] {
        assert!(store.list_machines().await.unwrap().is_empty());
    }
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let versions: i64 = client
        .query_one("SELECT COUNT(*) FROM schema_migrations", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(versions, i64::try_from(MIGRATIONS.len()).unwrap());
    let counters: i64 = client
        .query_one("SELECT COUNT(*) FROM relay_counter", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(counters, 1);
    drop(client);
    driver.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_errors_never_show_the_password() {
    let cluster = PgCluster::start().unwrap_or_else(|error| panic!("{error:#}"));
    const PASSWORD: &str = "s3cret-Hunter2-pw";
    // A port nobody listens on (the listener is closed before the connect).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let urls = [
        format!("postgres://paddock:{PASSWORD}@127.0.0.1:{closed}/fleet"),
        // A reachable server, a database that does not exist.
        format!(
            "postgres://paddock:{PASSWORD}@127.0.0.1:{}/no_such_database?sslmode=disable",
            cluster.port()
        ),
        // TLS required from a server that has none.
        format!(
            "postgres://paddock:{PASSWORD}@127.0.0.1:{}/paddock_test?sslmode=require",
            cluster.port()
        ),
    ];
    for url in urls {
        let parsed = DatabaseUrl::parse(&url).unwrap();
        assert!(!format!("{parsed:?}").contains(PASSWORD));
        assert!(!parsed.display().contains(PASSWORD));
        let error = store::open(&parsed).await.unwrap_err();
        let text = format!("{error} {error:?}");
        eprintln!("{text}");
        assert!(!text.contains(PASSWORD), "{text}");
        assert!(
            text.contains("127.0.0.1"),
            "the error names the host: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_relay_listener_reconnects_when_its_connection_drops() {
    let cluster = PgCluster::start().unwrap_or_else(|error| panic!("{error:#}"));
    let a = open(&cluster.url()).await;
    let b = open(&cluster.url()).await;
    let mut listener = b.relay_listen("replica-b".into()).await.unwrap();
    a.relay_post("replica-b".into(), "before".into())
        .await
        .unwrap();
    assert_eq!(receive(&mut listener).await, "before");

    // The database drops the listening connection (a restart, a failover, an idle timeout).
    let (client, connection) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let terminated: i64 = client
        .query_one(
            "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) AS ended",
            &[&paddock_server::store::postgres::RELAY_APPLICATION_NAME],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(terminated, 1);
    drop(client);
    driver.await.unwrap().unwrap();

    // Posted while the listener was away or reconnecting: still delivered, in order.
    a.relay_post("replica-b".into(), "after-1".into())
        .await
        .unwrap();
    a.relay_post("replica-b".into(), "after-2".into())
        .await
        .unwrap();
    assert_eq!(receive(&mut listener).await, "after-1");
    assert_eq!(receive(&mut listener).await, "after-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_a_unix_socket_without_tls() {
    let cluster = PgCluster::start().unwrap_or_else(|error| panic!("{error:#}"));
    let socket_dir = cluster
        .socket_dir()
        .display()
        .to_string()
        .replace('/', "%2F");
    let url = format!(
        "postgres://{}@{socket_dir}:{}/{}?sslmode=disable",
        paddock_testkit::postgres::SUPERUSER,
        cluster.port(),
        paddock_testkit::postgres::DATABASE
    );
    let store = open(&url).await;
    assert_eq!(store.kind(), "postgres");
    assert!(store.list_api_keys().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_with_tls_verifies_the_server_certificate() {
    let cluster = PgCluster::start_tls().unwrap_or_else(|error| panic!("{error:#}"));
    let ca = cluster.ca_pem().unwrap().display().to_string();
    // Trusted through `sslrootcert`: TLS required, and used.
    let url = format!("{}?sslmode=require&sslrootcert={ca}", cluster.url());
    let store = open(&url).await;
    assert!(store.list_api_keys().await.unwrap().is_empty());
    // A certificate nobody trusts: refused, whatever `require` means to libpq.
    let untrusted = format!("{}?sslmode=require", cluster.url());
    let error = store::open(&DatabaseUrl::parse(&untrusted).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("TLS") || error.contains("certificate"),
        "{error}"
    );
}
