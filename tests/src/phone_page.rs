//! The phone page as a paired phone meets it (README, "From your phone"): turned on with
//! `ctl web on`, paired with `ctl web pair`, answered with POSTs to `/answer`; shared by the
//! phone page's tests and the remote machines' test.

use crate::phone::{cookie_pair, PinnedClient, Reply};
use crate::real_app::AppWorld;

/// The phone page as `ctl web on --json` printed it, and a client pinned to it.
pub struct Page {
    /// The base URL.
    pub url: String,
    /// The certificate's fingerprint.
    pub fingerprint: String,
    /// A client trusting that certificate only.
    pub client: PinnedClient,
}

impl Page {
    /// POSTs an answer form to `/answer` as the paired device, with no other header.
    pub async fn answer(&self, cookie: &str, form: &str) -> Reply {
        self.client
            .post_form("/answer", Some(cookie), &[], form)
            .await
            .unwrap_or_else(|e| panic!("POST /answer {form}: {e}"))
    }

    /// POSTs `form` to `/answer` with `cookie` (none: unpaired): refused with `status`,
    /// and the request `id` still waits.
    pub async fn assert_refused(
        &self,
        world: &AppWorld,
        cookie: Option<&str>,
        form: &str,
        status: u16,
        id: &str,
    ) {
        let refused = self
            .client
            .post_form("/answer", cookie, &[], form)
            .await
            .unwrap_or_else(|e| panic!("POST /answer {form}: {e}"));
        assert_eq!(refused.status, status, "{form}: {refused:?}");
        assert_still_pending(world, id).await;
    }
}

/// `ctl web on --json` and a client pinned to what it printed.
pub async fn web_on(world: &AppWorld) -> Page {
    let on = world.ctl_json(&["web", "on"]).await;
    let url = on["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no url: {on}"))
        .to_owned();
    let fingerprint = on["fingerprint"]
        .as_str()
        .unwrap_or_else(|| panic!("no fingerprint: {on}"))
        .to_owned();
    assert!(
        url.starts_with("https://127.0.0.1:"),
        "loopback by default: {url}"
    );
    assert_eq!(
        fingerprint.len(),
        95,
        "SHA-256 as colon-separated hex: {fingerprint}"
    );
    let client = PinnedClient::new(&url, &fingerprint);
    Page {
        url,
        fingerprint,
        client,
    }
}

/// A pairing URL's path and query (`/pair?token=…`).
pub async fn pairing_path(world: &AppWorld, page: &Page) -> String {
    let pairing = world.ctl_json(&["web", "pair"]).await;
    let url = pairing["pairing_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no pairing_url: {pairing}"));
    assert!(pairing["expires_ms"].as_u64().is_some(), "{pairing}");
    url.strip_prefix(page.url.trim_end_matches('/'))
        .unwrap_or_else(|| panic!("{url} is not under {}", page.url))
        .to_owned()
}

/// Pairs the client: the cookie to send.
pub async fn pair(world: &AppWorld, page: &Page) -> String {
    let path = pairing_path(world, page).await;
    pair_at(page, &path).await.0
}

/// Pairs the client at the pairing `path`: the cookie to send, and the reply that set it.
pub async fn pair_at(page: &Page, path: &str) -> (String, Reply) {
    let paired = page.client.get(path, None).await.expect("pair");
    assert_eq!(paired.status, 303, "{paired:?}");
    let (cookie, attributes) = cookie_pair(paired.header("set-cookie").expect("a cookie"));
    for wanted in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
        assert!(
            attributes.iter().any(|a| a == wanted),
            "{wanted} missing: {attributes:?}"
        );
    }
    (cookie, paired)
}

/// The ids `ctl pending --json` lists.
pub async fn pending_ids(world: &AppWorld) -> Vec<u64> {
    let items = world.ctl_json(&["pending"]).await;
    items
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|i| i["id"].as_u64())
        .collect()
}

/// The one request `id` (as the page's form names it) is still all that waits.
pub async fn assert_still_pending(world: &AppWorld, id: &str) {
    assert_eq!(
        pending_ids(world).await,
        vec![id.parse::<u64>().expect("id")]
    );
}
