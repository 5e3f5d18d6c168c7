//! The Remote machines view of the settings window: the real app binary under tauri-driver
//! (WebKitWebDriver) on the test's X display, with the real `ssh` client. A remote added
//! with `ctl remote add` while the view is open appears in it (the app's event, no reload)
//! with its state in words: a loopback port nothing listens on is "Unreachable", with what
//! ssh said. The add form refuses a destination starting with `-` before anything is sent,
//! and adds a valid one; Remove asks first, Cancel keeps it, and confirmed it is gone from
//! `ctl remote list`. No sshd is needed for that: nothing gets past the TCP connect.
//! The states that need the person are shown against Debian's real sshd, started by the
//! test on a loopback port with its own host key (no user is made: a key it does not
//! accept is all "needs a key" takes): each says what to do in a terminal, naming the
//! destination, and the card offers no button that would accept a key. Needs root (sshd).

use std::path::Path;

use landstrip_tray_tests::real_app::{path_str, AppWorld};
use landstrip_tray_tests::settings_window::{open_settings, type_into, until_status, wait_gone};
use landstrip_tray_tests::sshd::{add_unreachable, Sshd};
use landstrip_tray_tests::until_some;
use landstrip_tray_tests::webdriver::{free_port, Session};
use serde_json::Value;

/// The remotes' names `ctl remote list --json` gives.
async fn listed(world: &AppWorld) -> Vec<String> {
    let list = world.ctl_json(&["remote", "list"]).await;
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|r| r["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// Adds `name` reaching `nobody` on `sshd` (no key of its is accepted) through
/// `known_hosts`.
async fn add_nobody(sshd: &Sshd, world: &AppWorld, name: &str, known_hosts: &Path) {
    world
        .ctl_ok(&[
            "remote",
            "add",
            name,
            "nobody@127.0.0.1",
            "--port",
            &sshd.port.to_string(),
            "--known-hosts",
            path_str(known_hosts),
        ])
        .await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_shows_its_state_live_and_the_view_adds_and_removes_remotes() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "remotes").await;
    session.wait_css("#remote-list .empty").await;

    // Added from a terminal while the view is open: it comes in by the app's event.
    let port = free_port();
    add_unreachable(&world, "far", port).await;
    let row = "#remote-list li[data-remote='far']";
    session
        .wait_css(&format!("{row}[data-state='unreachable']"))
        .await;
    let shown = session.text(row).await;
    for says in [
        "far",
        "Unreachable",
        "Connection refused",
        &format!("127.0.0.1 · port {port} · known hosts ~/.ssh/known_hosts_test"),
        "nothing waiting",
        "The app tries again",
    ] {
        assert!(shown.contains(says), "{says:?} not in {shown:?}");
    }
    let list = world.ctl_json(&["remote", "list"]).await;
    assert_eq!(list[0]["state"], "unreachable", "{list}");

    // A destination that ssh would read as an option: refused in the form, nothing sent.
    type_into(&session, "#remote-name", "evil").await;
    type_into(
        &session,
        "#remote-destination",
        "-oProxyCommand=touch pwned",
    )
    .await;
    session.click("#remote-add").await;
    let error = session.text("#remote-error").await;
    assert_eq!(
        error,
        "“-oProxyCommand=touch pwned” starts with “-”: ssh would read it as an option, so it is refused."
    );
    assert_eq!(
        session
            .attr("#remote-destination", "aria-invalid")
            .await
            .as_deref(),
        Some("true")
    );
    assert_eq!(
        session.focused("id").await.as_deref(),
        Some("remote-destination")
    );
    assert_eq!(listed(&world).await, ["far"]);

    // A valid one, with a port, a key and a known hosts file typed under ~.
    session.clear("#remote-destination").await;
    let near_port = free_port();
    type_into(&session, "#remote-destination", "me@127.0.0.1").await;
    type_into(&session, "#remote-port", &near_port.to_string()).await;
    type_into(&session, "#remote-identity", "~/.ssh/id_test").await;
    type_into(&session, "#remote-known-hosts", "~/.ssh/kh").await;
    session.clear("#remote-name").await;
    type_into(&session, "#remote-name", "near").await;
    let near_port_text = near_port.to_string();
    for (css, typed) in [
        ("#remote-name", "near"),
        ("#remote-destination", "me@127.0.0.1"),
        ("#remote-port", near_port_text.as_str()),
        ("#remote-identity", "~/.ssh/id_test"),
        ("#remote-known-hosts", "~/.ssh/kh"),
    ] {
        assert_eq!(
            session.prop(css, "value").await.as_deref(),
            Some(typed),
            "{css} does not hold what was typed"
        );
    }
    session.click("#remote-add").await;
    // The status line says it, or the form says why not (shown if so).
    let said = until_some("the add said", || async {
        let error = session.text("#remote-error").await;
        assert_eq!(error, "", "the form refused it");
        let said = session.text("#status").await;
        said.contains("near").then_some(said)
    })
    .await;
    assert_eq!(said, "near added; connecting to me@127.0.0.1.");
    session
        .wait_css("#remote-list li[data-remote='near']")
        .await;
    let list = world.ctl_json(&["remote", "list"]).await;
    let near = list
        .as_array()
        .expect("an array")
        .iter()
        .find(|r| r["name"] == "near")
        .unwrap_or_else(|| panic!("near not in {list}"));
    assert_eq!(near["destination"], "me@127.0.0.1", "{near}");
    assert_eq!(near["port"], near_port, "{near}");
    assert_eq!(
        near["identity"],
        path_str(&world.home.join(".ssh/id_test")),
        "{near}"
    );
    assert_eq!(
        near["known_hosts"],
        path_str(&world.home.join(".ssh/kh")),
        "{near}"
    );
    assert_eq!(
        session.prop("#remote-name", "value").await.as_deref(),
        Some(""),
        "the form is emptied"
    );

    // Remove asks first; Cancel (or Escape) keeps it.
    session.click("#remote-far-remove").await;
    session.wait_css("#remote-far-confirm").await;
    assert_eq!(
        session.focused("id").await.as_deref(),
        Some("remote-far-confirm")
    );
    let asked = session.text(&format!("{row} .confirm-remove")).await;
    assert!(asked.contains("Remove far?"), "{asked}");
    session.click("#remote-far-cancel").await;
    wait_gone(&session, "#remote-far-confirm").await;
    assert_eq!(
        session.focused("id").await.as_deref(),
        Some("remote-far-remove")
    );
    assert_eq!(listed(&world).await, ["far", "near"]);

    session.click("#remote-far-remove").await;
    session.click("#remote-far-confirm").await;
    wait_gone(&session, row).await;
    let said = until_status(&session, "the removal said", |s| s.contains("removed")).await;
    assert_eq!(said, "far removed; its requests wait on that machine.");
    assert_eq!(listed(&world).await, ["near"]);
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(world.settings_file()).expect("the settings file"),
    )
    .expect("JSON");
    assert_eq!(
        settings["remotes"].as_array().map(Vec::len),
        Some(1),
        "{settings}"
    );
    session.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_needs_the_person_says_what_to_do_and_offers_no_accept_button() {
    let world = AppWorld::new();
    let sshd = Sshd::start(&world.base, None).await;
    let unknown = world.base.join("empty_known_hosts");
    std::fs::write(&unknown, "").expect("write");
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "remotes").await;
    add_nobody(&sshd, &world, "stranger", &unknown).await;
    add_nobody(&sshd, &world, "keyless", &sshd.known_hosts).await;

    let stranger = "#remote-list li[data-remote='stranger']";
    session
        .wait_css(&format!("{stranger}[data-state='host_key_unknown']"))
        .await;
    let hint = session.text(&format!("{stranger} [data-hint]")).await;
    assert_eq!(
        hint,
        "Run `ssh nobody@127.0.0.1` once in a terminal and check the key's fingerprint before \
         you accept it. The app never accepts a host key by itself."
    );
    let keyless = "#remote-list li[data-remote='keyless']";
    session
        .wait_css(&format!("{keyless}[data-state='needs_key']"))
        .await;
    let hint = session.text(&format!("{keyless} [data-hint]")).await;
    assert!(
        hint.starts_with("Add your public key to the remote's authorized_keys"),
        "{hint}"
    );
    assert!(session.text(keyless).await.contains("Needs a key"));
    // Each card's only button is Remove: nothing here accepts a key.
    let buttons = session
        .bounded(
            "the cards' buttons",
            session.client().execute(
                "return [...document.querySelectorAll('#remote-list button')].map((b) => b.id)",
                vec![],
            ),
        )
        .await;
    assert_eq!(
        buttons,
        serde_json::json!(["remote-keyless-remove", "remote-stranger-remove"])
    );
    // The unknown key was not written anywhere by asking.
    assert_eq!(std::fs::read_to_string(&unknown).expect("read"), "");
    session.finish().await;
}

/// Writes the Remote machines screenshots under docs/ (`cargo test -p landstrip-tray-tests
/// --test settings_remotes -- --ignored --exact screenshots`): a remote that needs a key,
/// one whose host key is not known (the test's sshd), one unreachable, and the form
/// refusing a destination that starts with `-`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::new();
        let sshd = Sshd::start(&world.base, None).await;
        let unknown = world.base.join("empty_known_hosts");
        std::fs::write(&unknown, "").expect("write");
        let session = Session::start(&world, &env).await;
        add_nobody(&sshd, &world, "buildbox", &sshd.known_hosts).await;
        add_nobody(&sshd, &world, "devbox", &unknown).await;
        add_unreachable(&world, "old-vm", free_port()).await;
        open_settings(&world, &session, "remotes").await;
        for (name, state) in [
            ("buildbox", "needs_key"),
            ("devbox", "host_key_unknown"),
            ("old-vm", "unreachable"),
        ] {
            session
                .wait_css(&format!(
                    "#remote-list li[data-remote='{name}'][data-state='{state}']"
                ))
                .await;
        }
        type_into(&session, "#remote-name", "gpu").await;
        type_into(&session, "#remote-destination", "-oProxyCommand=x").await;
        session.click("#remote-add").await;
        session
            .wait_css("#remote-destination[aria-invalid='true']")
            .await;
        session
            .bounded(
                "make the window taller",
                session.client().set_window_size(980, 880),
            )
            .await;
        // From the heading down (the focus scrolled the form into view).
        session
            .bounded(
                "scroll to the top",
                session
                    .client()
                    .execute("document.getElementById('main').scrollTop = 0", vec![]),
            )
            .await;
        session
            .screenshot(&out.join(format!("settings-remotes-{theme}.png")))
            .await;
        session.finish().await;
    }
}
