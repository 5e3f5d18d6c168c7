//! `ctl web`'s replies for a person: the page's state, the pairing URL with its QR code
//! (Unicode half blocks) and the fingerprint beside it, the devices.

use landstrip_tray_core::activity::now_ms;
use landstrip_tray_core::serving::web::DeviceInfo;
use landstrip_tray_core::surfaces::control::Reply;
use landstrip_tray_core::surfaces::web::{WebPairing, WebStatus};

use super::table::{table, utc_time};

/// A `ctl web` reply; other replies are not this module's (empty).
pub(super) fn render_web_reply(reply: &Reply) -> String {
    match reply {
        Reply::Web(status) => render_web(status),
        Reply::WebPairing(pairing) => render_pairing(pairing, now_ms()),
        Reply::WebDevices(devices) => render_devices(devices, utc_time),
        Reply::WebRevoked(device) => format!(
            "revoked device {} ({}); its next request is refused\n",
            device.id, device.name
        ),
        _ => String::new(),
    }
}

/// The page's state.
fn render_web(status: &WebStatus) -> String {
    match (&status.url, &status.fingerprint) {
        (Some(url), Some(fingerprint)) if status.on => format!(
            "phone page: on at {url}\ncertificate fingerprint (SHA-256): {fingerprint}\n\
             pair a phone with `landstrip-tray ctl web pair`\n"
        ),
        _ => "phone page: off (`landstrip-tray ctl web on` starts it)\n".to_owned(),
    }
}

/// The pairing URL, its QR code with the fingerprint beside it, and the expiry.
fn render_pairing(pairing: &WebPairing, now_ms: u64) -> String {
    let minutes = pairing.expires_ms.saturating_sub(now_ms).div_ceil(60_000);
    let mut beside = vec![
        String::new(),
        "Scan it, or open:".to_owned(),
        pairing.pairing_url.clone(),
        String::new(),
        "Compare the certificate's".to_owned(),
        "fingerprint (SHA-256):".to_owned(),
    ];
    // 8 bytes (23 characters) a line.
    let bytes: Vec<&str> = pairing.fingerprint.split(':').collect();
    beside.extend(bytes.chunks(8).map(|c| c.join(":")));
    beside.push(String::new());
    beside.push(format!("Single use; expires in {minutes} min."));
    let qr = qr_lines(&pairing.qr);
    let mut out = String::new();
    let rows = qr.len().max(beside.len());
    for i in 0..rows {
        let left = qr.get(i).map(String::as_str).unwrap_or("");
        let pad = qr.first().map(|r| r.chars().count()).unwrap_or(0);
        let right = beside.get(i).map(String::as_str).unwrap_or("");
        let gap = pad.saturating_sub(left.chars().count());
        out.push_str(format!("{left}{}  {right}", " ".repeat(gap)).trim_end());
        out.push('\n');
    }
    out
}

/// The QR matrix (`1` dark) as half-block lines, two matrix rows a line, with a quiet
/// zone of two modules. Light modules are drawn filled: on a terminal's dark background
/// with light text this gives dark modules on light, as a camera expects.
fn qr_lines(rows: &[String]) -> Vec<String> {
    const QUIET: usize = 2;
    let width = rows.first().map(String::len).unwrap_or(0) + 2 * QUIET;
    let dark = |y: isize, x: usize| -> bool {
        if y < QUIET as isize || x < QUIET {
            return false;
        }
        rows.get(y as usize - QUIET)
            .and_then(|r| r.as_bytes().get(x - QUIET))
            .is_some_and(|b| *b == b'1')
    };
    let height = rows.len() + 2 * QUIET;
    (0..height.div_ceil(2))
        .map(|line| {
            let top = (line * 2) as isize;
            (0..width)
                .map(|x| {
                    // Filled where light.
                    let upper = !dark(top, x);
                    let lower = (top + 1) < height as isize && !dark(top + 1, x);
                    match (upper, lower) {
                        (true, true) => '█',
                        (true, false) => '▀',
                        (false, true) => '▄',
                        (false, false) => ' ',
                    }
                })
                .collect()
        })
        .collect()
}

/// The paired devices.
fn render_devices(devices: &[DeviceInfo], age: impl Fn(u64) -> String) -> String {
    if devices.is_empty() {
        return "no paired devices\n".to_owned();
    }
    let rows = devices
        .iter()
        .map(|d| {
            vec![
                d.id.to_string(),
                d.name.clone(),
                age(d.paired_ms),
                d.last_used_ms
                    .map(&age)
                    .unwrap_or_else(|| "never".to_owned()),
            ]
        })
        .collect();
    table(&["ID", "NAME", "PAIRED", "LAST USED"], rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_matrix_rows_make_one_line_with_a_quiet_zone() {
        let rows = vec!["10".to_owned(), "01".to_owned()];
        let lines = qr_lines(&rows);
        // 2 + 2 + 2 rows of height: 3 lines; 6 columns.
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| l.chars().count() == 6));
        assert_eq!(lines[0], "██████");
        assert_eq!(lines[1], "██▄▀██");
        assert_eq!(lines[2], "██████");
    }
}
