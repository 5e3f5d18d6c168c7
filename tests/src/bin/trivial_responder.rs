//! The floor the load benchmark (`tests/benches/load.rs`) measures the app against: a
//! presenter that does nothing but answer. It listens on 127.0.0.1 (an ephemeral port,
//! printed as one line on stdout), serves each connection on a thread of its own, and
//! answers every line carrying `"state":"query"` with `{"query_id":<id>,"action":"allow"}`
//! — the id's raw JSON text copied, exactly the line the app writes — without parsing any
//! JSON. Other lines (the session hello, terminal traps) get no answer, as from the app.
//! It runs until killed.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

const QUERY: &[u8] = br#""state":"query""#;
const ID: &[u8] = br#""query_id":"#;

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The raw JSON text of the line's query_id (up to the next `,` or `}`).
fn raw_id(line: &[u8]) -> Option<&[u8]> {
    let rest = &line[find(line, ID)? + ID.len()..];
    let end = rest
        .iter()
        .position(|b| *b == b',' || *b == b'}')
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut line = Vec::with_capacity(1024);
    let mut answer = Vec::with_capacity(64);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if find(&line, QUERY).is_none() {
            continue;
        }
        let Some(id) = raw_id(&line) else { continue };
        answer.clear();
        answer.extend_from_slice(b"{\"query_id\":");
        answer.extend_from_slice(id);
        answer.extend_from_slice(b",\"action\":\"allow\"}\n");
        if writer.write_all(&answer).is_err() {
            return;
        }
    }
}

fn main() {
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("trivial_responder: bind 127.0.0.1: {e}");
            std::process::exit(1);
        }
    };
    let port = match listener.local_addr() {
        Ok(addr) => addr.port(),
        Err(e) => {
            eprintln!("trivial_responder: {e}");
            std::process::exit(1);
        }
    };
    println!("{port}");
    let _ = std::io::stdout().flush();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        // Without a thread the connection is dropped: landstrip denies what it held.
        let _ = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || serve(stream));
    }
}
