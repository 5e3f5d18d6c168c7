//! The phone page's HTML, rendered on the server with the waiting requests in it (it
//! works without its script), from the dialog's own view model (`prompt_view`), so the
//! words match the dialog's. Everything that comes from a request is escaped.

use std::fmt::Write;

use crate::decision::answer::ChoiceKey;
use crate::surfaces::prompt_view::PromptView;

/// One waiting request as the page shows it.
pub struct Item {
    /// The dialog's view of it.
    pub view: PromptView,
    /// The page may offer Allow for it (not sensitive or after a secret, or the
    /// `webSensitive` setting allows it).
    pub may_allow: bool,
    /// It is sensitive or after a secret: Allow takes a second tap.
    pub marked: bool,
}

/// A line at the top of the page.
pub enum Notice {
    /// Nothing.
    None,
    /// An answer went through.
    Done(&'static str),
    /// An answer was refused or failed.
    Problem(String),
}

/// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn head(title: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\">\
<title>{}</title><link rel=\"stylesheet\" href=\"/page.css\">\
<script type=\"module\" src=\"/page.js\"></script></head><body>",
        escape(title)
    )
}

/// The whole page: the waiting requests (`version` names the set, for live updates).
pub fn page(
    items: &[Item],
    device: &str,
    form_token: &str,
    version: &str,
    notice: &Notice,
) -> String {
    let mut html = head(&match items.len() {
        0 => "landstrip-tray: nothing waiting".to_owned(),
        1 => "landstrip-tray: 1 request waiting".to_owned(),
        n => format!("landstrip-tray: {n} requests waiting"),
    });
    let _ = write!(
        html,
        "<header><h1>landstrip-tray</h1><p class=\"device\">This device: {}</p></header>",
        escape(device)
    );
    let _ = write!(
        html,
        "<main id=\"requests\" data-version=\"{}\">",
        escape(version)
    );
    match notice {
        Notice::None => {}
        Notice::Done(words) => {
            let _ = write!(
                html,
                "<p class=\"notice\" role=\"status\">{}</p>",
                escape(words)
            );
        }
        Notice::Problem(words) => {
            let _ = write!(
                html,
                "<p class=\"notice problem\" role=\"alert\">{}</p>",
                escape(words)
            );
        }
    }
    if items.is_empty() {
        html.push_str("<p class=\"empty\">Nothing is waiting for an answer.</p>");
    }
    for item in items {
        request(&mut html, item, form_token);
    }
    html.push_str("</main></body></html>\n");
    html
}

/// The second tap: allowing a sensitive or after-a-secret request, confirmed.
pub fn confirm(item: &Item, choice: ChoiceKey, form_token: &str) -> String {
    let mut html = head("landstrip-tray: confirm");
    html.push_str("<header><h1>landstrip-tray</h1></header><main class=\"confirm\">");
    details(&mut html, &item.view);
    let what = match choice {
        ChoiceKey::Session => "Allow this for the session (1 hour)?",
        _ => "Allow this request once?",
    };
    let _ = write!(
        html,
        "<p class=\"question\">{what}</p><form method=\"post\" action=\"/answer\">{}\
<input type=\"hidden\" name=\"choice\" value=\"{}\">\
<input type=\"hidden\" name=\"confirmed\" value=\"yes\">\
<div class=\"buttons\"><button class=\"allow\" type=\"submit\">Yes, allow</button>\
<a class=\"button\" href=\"/\">Back</a></div></form></main></body></html>",
        hidden(item.view.id, form_token),
        choice.as_str()
    );
    html
}

/// A short page for a refusal (401, 410, 429): no request data.
pub fn refusal(title: &str, words: &str) -> String {
    let mut html = head(title);
    let _ = write!(
        html,
        "<header><h1>landstrip-tray</h1></header><main><p class=\"notice problem\">{}</p></main></body></html>",
        escape(words)
    );
    html
}

fn hidden(id: u64, form_token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"id\" value=\"{id}\">\
<input type=\"hidden\" name=\"token\" value=\"{}\">",
        escape(form_token)
    )
}

fn row(html: &mut String, label: &str, value: Option<&str>, code: bool) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        let value = escape(value);
        let value = if code {
            format!("<code>{value}</code>")
        } else {
            value
        };
        let _ = write!(html, "<dt>{label}</dt><dd>{value}</dd>");
    }
}

fn details(html: &mut String, view: &PromptView) {
    let _ = write!(
        html,
        "<h2>{}</h2><p class=\"summary\">{}</p>",
        escape(&view.title),
        escape(&view.summary)
    );
    if let Some(s) = &view.sensitive {
        let _ = write!(
            html,
            "<p class=\"mark sensitive\">Sensitive: {} ({})</p>",
            escape(&s.what),
            escape(&s.location.text)
        );
    }
    if let Some(read) = &view.after_secret {
        let _ = write!(
            html,
            "<p class=\"mark after-secret\">After a secret: its run read {} ({})</p>",
            escape(&read.path.text),
            escape(&read.what)
        );
    }
    html.push_str("<dl>");
    let origin = view.origin.as_ref();
    row(
        html,
        "Command",
        origin.map(|o| o.command.text.as_str()),
        true,
    );
    row(
        html,
        "Agent",
        origin.and_then(|o| o.description.as_deref()),
        false,
    );
    row(
        html,
        "Session",
        origin.and_then(|o| o.session_title.as_deref()),
        false,
    );
    let subject = if view.kind == "network" {
        "Address"
    } else {
        "Path"
    };
    row(html, subject, Some(&view.subject.text), true);
    row(html, "Reason", view.reason.as_deref(), false);
    let operation = format!("{} {}", view.kind, view.operation);
    row(html, "Operation", Some(&operation), false);
    row(html, "Program", Some(&view.program.name), false);
    row(html, "Project", Some(&view.project.text), false);
    html.push_str("</dl>");
}

fn request(html: &mut String, item: &Item, form_token: &str) {
    let view = &item.view;
    let mut class = String::from("request");
    if view.sensitive.is_some() {
        class.push_str(" sensitive");
    }
    if view.after_secret.is_some() {
        class.push_str(" after-secret");
    }
    let _ = write!(
        html,
        "<article class=\"{class}\" id=\"request-{}\" data-id=\"{}\">",
        view.id, view.id
    );
    details(html, view);
    let session = view.after_secret.as_ref().is_none_or(|r| !r.network)
        && view.choices.iter().any(|c| c.key == ChoiceKey::Session);
    let _ = write!(
        html,
        "<form method=\"post\" action=\"/answer\">{}<div class=\"buttons\">",
        hidden(view.id, form_token)
    );
    if item.may_allow {
        let tap = if item.marked { " (confirm next)" } else { "" };
        let _ = write!(
            html,
            "<button class=\"allow\" type=\"submit\" name=\"choice\" value=\"once\">Allow once{tap}</button>"
        );
        if session {
            let _ = write!(
                html,
                "<button class=\"session\" type=\"submit\" name=\"choice\" value=\"session\" \
title=\"Allow {} for 1 hour\">Allow for session{tap}</button>",
                escape(&view.session_scope.text)
            );
        }
    }
    html.push_str(
        "<button class=\"deny\" type=\"submit\" name=\"choice\" value=\"deny\">Deny</button></div></form>",
    );
    if !item.may_allow {
        html.push_str(if view.host.is_some() {
            "<p class=\"desk\">Answer this at the desktop to allow it: the phone page may only deny another machine's request.</p>"
        } else {
            "<p class=\"desk\">Answer this at the desktop to allow it: the phone page may only deny a sensitive or after-a-secret request.</p>"
        });
    }
    html.push_str("</article>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        let hostile = "<script>alert('x')</script>&\"";
        let out = escape(hostile);
        assert_eq!(
            out,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
        let page = refusal("t", hostile);
        assert!(!page.contains("<script>alert"), "{page}");
    }

    #[test]
    fn a_device_name_is_escaped_on_the_page() {
        let page = page(
            &[],
            "<b>phone</b>",
            "tok\"en",
            "v",
            &Notice::Problem("<i>".into()),
        );
        assert!(
            page.contains("This device: &lt;b&gt;phone&lt;/b&gt;"),
            "{page}"
        );
        assert!(page.contains("&lt;i&gt;"), "{page}");
        assert!(page.contains("Nothing is waiting"), "{page}");
        assert!(!page.contains("<b>phone"), "{page}");
    }

    #[test]
    fn the_form_token_is_escaped_in_the_forms() {
        let prompt = crate::surfaces::prompt_view::test_write(7, "/home/dev/src/proj/out.txt");
        let item = Item {
            view: crate::surfaces::prompt_view::build_view(
                &prompt,
                std::path::Path::new("/home/dev"),
                1,
                1,
                0,
            ),
            may_allow: true,
            marked: true,
        };
        let hostile = "tok\"en";
        let shown = page(
            std::slice::from_ref(&item),
            "phone",
            hostile,
            "v7",
            &Notice::None,
        );
        assert!(shown.contains("id=\"request-7\""), "{shown}");
        let confirmation = confirm(&item, ChoiceKey::Once, hostile);
        for html in [shown, confirmation] {
            assert!(
                html.contains("name=\"token\" value=\"tok&quot;en\""),
                "{html}"
            );
            assert!(!html.contains(hostile), "{html}");
        }
    }
}
