//! The policy editor of the real app's settings window, by keyboard and mouse like a
//! person: editing an entry in place, the check of a typed entry before it is saved (broad
//! access needs "Save anyway"; an invalid entry cannot be saved), and undo of the last
//! save. The real app binary under tauri-driver on the test's X display, the window opened
//! through the real control socket, and every outcome read from the files on disk (parsed
//! by the core's own parser). Nothing is mocked.

use fantoccini::key::Key;
use landstrip_tray_tests::real_app::AppWorld;
use landstrip_tray_tests::settings_window::{
    chord, click_fresh, list, open_settings, project_file_valid, type_into, until_file,
    until_missing, until_status,
};
use landstrip_tray_tests::webdriver::Session;

const PROJECT: &str = "section[data-file='project']";

fn list_css(list: &str) -> String {
    format!("{PROJECT} [data-list='{list}']")
}

fn entry_css(list: &str, entry: &str) -> String {
    format!("{} li[data-entry='{entry}']", list_css(list))
}

fn add_css(list: &str) -> String {
    format!("{} .add-row input[data-key]", list_css(list))
}

const ENTER: char = '\u{e007}';

/// Writes the project's sandbox.json as these exact bytes.
fn write_project_file(world: &AppWorld, text: &str) {
    let file = world.project_policy();
    std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir .opencode");
    std::fs::write(file, text).expect("write sandbox.json");
}

fn project_bytes(world: &AppWorld) -> Vec<u8> {
    std::fs::read(world.project_policy()).expect("read the project file")
}

/// Focuses an entry of the project file by clicking it (it is focusable).
async fn focus_entry(session: &Session, list: &str, entry: &str) {
    click_fresh(session, &entry_css(list, entry)).await;
    assert_eq!(
        session.focused("data-entry").await.as_deref(),
        Some(entry),
        "the entry has the focus"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_is_edited_in_place_by_keyboard_and_keeps_its_position() {
    let world = AppWorld::new();
    let original =
        "{\n  \"filesystem\": {\n    \"allowRead\": [\"~/a\",  \"~/b\", \"~/c\"]\n  },\n  \"network\": {\"allowNetwork\": false}\n}\n";
    write_project_file(&world, original);
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;
    let read = "filesystem.allowRead";

    // Escape cancels: nothing written, the focus back on the entry.
    focus_entry(&session, read, "~/a").await;
    session.press(Key::Enter.into()).await;
    let edit = format!("{} input.edit", list_css(read));
    type_into(&session, &edit, "-changed").await;
    session.press(Key::Escape.into()).await;
    session.wait_css(&entry_css(read, "~/a")).await;
    assert_eq!(session.focused("data-entry").await.as_deref(), Some("~/a"));
    assert_eq!(project_bytes(&world), original.as_bytes());

    // F2 edits; the input holds the entry; Enter saves it in place.
    focus_entry(&session, read, "~/b").await;
    session.press(Key::F2.into()).await;
    let input = session.wait_css(&edit).await;
    let value = session
        .bounded("the edit box's value", input.prop("value"))
        .await;
    assert_eq!(value.as_deref(), Some("~/b"), "prefilled with the entry");
    session.bounded("clear the edit box", input.clear()).await;
    type_into(&session, &edit, &format!("~/.cache/q{ENTER}")).await;
    let text = until_file(&world, "the edited entry on disk", |t| {
        list(t, read).contains(&"~/.cache/q".to_owned())
    })
    .await;
    project_file_valid(&world);
    assert_eq!(
        list(&text, read),
        ["~/a", "~/.cache/q", "~/c"],
        "same position"
    );
    assert_eq!(
        text,
        original.replace("\"~/b\"", "\"~/.cache/q\""),
        "every other byte kept"
    );
    // The page hears the reply after the file is on disk: its status line is waited for.
    until_status(&session, "says which file", |s| s.contains("sandbox.json")).await;
    // The focus is on the edited entry again, and the effective view has it.
    session.wait_css(&entry_css(read, "~/.cache/q")).await;
    session
        .wait_css(&format!(
            "section[data-file='effective'] [data-list='{read}'] li[data-entry='~/.cache/q'][data-source='project']"
        ))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broad_entry_needs_save_anyway_and_an_invalid_one_cannot_be_saved() {
    let world = AppWorld::new();
    let original = "{\"filesystem\": {\"allowWrite\": [\"keep\"]}}\n";
    write_project_file(&world, original);
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;
    let write = "filesystem.allowWrite";
    let add = add_css(write);
    let area = format!("{} .add-row + .entry-check", list_css(write));

    // While typing: what it reads as, and the broad flag, before anything is saved.
    type_into(&session, &add, "~").await;
    let flag = session.text(&format!("{area} [data-flag='broad']")).await;
    assert!(flag.contains("your whole home folder"), "{flag}");
    let meaning = session.text(&format!("{area} [data-flag='meaning']")).await;
    assert!(meaning.contains("your home folder"), "{meaning}");
    // Enter alone asks for the confirmation and writes nothing.
    type_into(&session, &add, &ENTER.to_string()).await;
    session
        .wait_css(&format!(
            "{area} [data-confirm] button[data-action='save-anyway']"
        ))
        .await;
    assert_eq!(
        project_bytes(&world),
        original.as_bytes(),
        "not saved on Enter"
    );
    // "Save anyway" saves it.
    click_fresh(
        &session,
        &format!("{area} [data-confirm] button[data-action='save-anyway']"),
    )
    .await;
    let text = until_file(&world, "the confirmed broad entry", |t| {
        list(t, write).contains(&"~".to_owned())
    })
    .await;
    assert_eq!(list(&text, write), ["keep", "~"]);
    project_file_valid(&world);
    let saved = project_bytes(&world);

    // An empty entry: its message next to the field, the field marked, nothing written.
    type_into(&session, &add, &format!("   {ENTER}")).await;
    let message = session.text(&format!("{area} [data-flag='invalid']")).await;
    assert!(message.contains("not a usable entry"), "{message}");
    let described = session
        .attr(&format!("{add}[aria-invalid='true']"), "aria-describedby")
        .await
        .expect("aria-describedby");
    let by = session.text(&format!("#{described}")).await;
    assert!(by.contains("not a usable entry"), "{by}");
    assert_eq!(project_bytes(&world), saved);

    // Editing an entry into one the list already has: refused with its message too.
    focus_entry(&session, write, "keep").await;
    session.press(Key::F2.into()).await;
    let edit = format!("{} input.edit", list_css(write));
    let box_ = session.wait_css(&edit).await;
    session.bounded("clear the edit box", box_.clear()).await;
    type_into(&session, &edit, &format!("~{ENTER}")).await;
    let message = session
        .text(&format!(
            "{} li.editing [data-flag='invalid']",
            list_css(write)
        ))
        .await;
    assert!(message.contains("already in"), "{message}");
    session
        .wait_css(&format!("{edit}[aria-invalid='true']"))
        .await;
    assert_eq!(project_bytes(&world), saved);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_the_previous_bytes_and_removes_a_file_the_save_created() {
    let world = AppWorld::new();
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;
    let write = "filesystem.allowWrite";
    let file = world.project_policy();
    assert!(!file.exists());

    // A save that creates the file; "Undo" removes it again.
    type_into(&session, &add_css(write), &format!("out{ENTER}")).await;
    until_file(&world, "the created file", |t| {
        list(t, write).contains(&"out".to_owned())
    })
    .await;
    click_fresh(&session, "#undo:not([hidden])").await;
    until_missing(&file, "the file the save created").await;
    let status = until_status(&session, "the undo said", |s| s.contains("removed")).await;
    assert!(status.contains("sandbox.json"), "{status}");

    // An existing file with its own formatting: Ctrl+Z (focus on an entry, not in a
    // text field) brings its bytes back exactly.
    let original = "{ \"filesystem\":{ \"allowWrite\" :[\"keep\"] } ,\n\n \"enabled\": true }  \n";
    write_project_file(&world, original);
    session.wait_css(&entry_css(write, "keep")).await;
    type_into(&session, &add_css(write), &format!("more{ENTER}")).await;
    until_file(&world, "the second save", |t| {
        list(t, write).contains(&"more".to_owned())
    })
    .await;
    focus_entry(&session, write, "more").await;
    chord(&session, Key::Control.into(), 'z').await;
    until_file(&world, "the previous bytes back", |t| t == original).await;
    assert_eq!(project_bytes(&world), original.as_bytes());
    until_status(&session, "the undo said", |s| s.contains("restored")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_after_an_external_edit_is_refused_and_the_file_kept() {
    let world = AppWorld::new();
    write_project_file(&world, "{\"filesystem\": {\"allowWrite\": [\"keep\"]}}\n");
    let session = Session::start(&world, &[]).await;
    open_settings(&world, &session, "policy").await;
    let write = "filesystem.allowWrite";
    type_into(&session, &add_css(write), &format!("mine{ENTER}")).await;
    until_file(&world, "the save", |t| {
        list(t, write).contains(&"mine".to_owned())
    })
    .await;
    session.wait_css("#undo:not([hidden])").await;
    let external = "{\"filesystem\": {\"allowWrite\": [\"keep\", \"mine\", \"by-hand\"]}}\n";
    write_project_file(&world, external);
    session.wait_css(&entry_css(write, "by-hand")).await;
    click_fresh(&session, "#undo:not([hidden])").await;
    let status = until_status(&session, "the refusal", |s| s.contains("changed since")).await;
    assert_eq!(
        session.attr("#status", "data-kind").await.as_deref(),
        Some("error"),
        "{status}"
    );
    assert_eq!(project_bytes(&world), external.as_bytes());
}

/// Not a test of behaviour: writes docs/settings-editor-{light,dark}.png, an entry being
/// edited into a broad one awaiting "Save anyway" and a typed entry's explanation
/// (`xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo test -p
/// landstrip-tray-tests --test settings_editor -- --ignored --exact screenshots`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/ screenshots"]
async fn screenshots() {
    let out = landstrip_tray_tests::screenshot_dir();
    for (theme, env) in landstrip_tray_tests::screenshot_themes() {
        let world = AppWorld::with_project("home/src/webapp");
        write_project_file(
            &world,
            "{\n  \"filesystem\": {\n    \"allowWrite\": [\"target\", \"~/.cache/webapp\"],\n    \"allowRead\": [\"~/.gitconfig\"]\n  }\n}\n",
        );
        std::fs::create_dir_all(world.project.join("target")).expect("mkdir target");
        let session = Session::start(&world, &env).await;
        open_settings(&world, &session, "policy").await;
        let write = "filesystem.allowWrite";
        focus_entry(&session, write, "~/.cache/webapp").await;
        session.press(Key::F2.into()).await;
        let edit = format!("{} input.edit", list_css(write));
        let input = session.wait_css(&edit).await;
        session.bounded("clear the edit box", input.clear()).await;
        type_into(&session, &edit, &format!("~{ENTER}")).await;
        session
            .wait_css(&format!("{} li.editing [data-confirm]", list_css(write)))
            .await;
        type_into(&session, &add_css("filesystem.allowRead"), "target").await;
        session
            .wait_css(&format!(
                "{} .add-row + .entry-check [data-flag='meaning']",
                list_css("filesystem.allowRead")
            ))
            .await;
        session.settle_paint().await;
        session
            .screenshot(&out.join(format!("settings-editor-{theme}.png")))
            .await;
        session.finish().await;
    }
}
