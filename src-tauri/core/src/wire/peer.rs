//! Who is on the other end of a loopback TCP connection. Any local user can connect to a
//! query port, so the listener asks the kernel which uid owns the peer's socket: in
//! `/proc/net/tcp` (and `tcp6`) the peer's own socket is the row whose local address is
//! the peer's address and whose remote address is ours, and its `uid` column is the owner.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The kernel's TCP tables, IPv4 first (the query listeners are IPv4).
const TCP4: &str = "/proc/net/tcp";
const TCP6: &str = "/proc/net/tcp6";

/// `st` of a TIME_WAIT row: the kernel prints uid 0 for those, whoever owned the socket.
const TIME_WAIT: &str = "06";

/// Why the peer's uid is unknown.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// A table could not be read (no /proc, say).
    #[error("{file}: {source}")]
    Read {
        /// The table.
        file: &'static str,
        /// Why.
        source: io::Error,
    },
    /// No live socket matches (the peer closed it already, or is in another network
    /// namespace).
    #[error("no socket {peer} -> {local} in {TCP4} or {TCP6}")]
    NotFound {
        /// The peer's address.
        peer: SocketAddr,
        /// Our side of the connection.
        local: SocketAddr,
    },
}

/// The uid owning the peer's socket of a TCP connection on this host, where `local` is our
/// side of the connection and `peer` the other side. Reads procfs: call it off the async
/// runtime, once per accepted connection.
pub fn tcp_peer_uid(local: SocketAddr, peer: SocketAddr) -> Result<u32, PeerError> {
    let v4_pair = match (local.ip(), peer.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => Some((hex_address(peer), hex_address(local))),
        _ => None,
    };
    if let Some((row_local, row_remote)) = &v4_pair {
        if let Some(uid) = search(TCP4, row_local, row_remote)? {
            return Ok(uid);
        }
    }
    // A dual-stack IPv6 socket reaching an IPv4 address shows as ::ffff:a.b.c.d in tcp6.
    let row_local = hex_address(v6_form(peer));
    let row_remote = hex_address(v6_form(local));
    match search(TCP6, &row_local, &row_remote) {
        Ok(Some(uid)) => Ok(uid),
        // A kernel without IPv6 has no tcp6; only an error when there was nothing else.
        Err(_) if v4_pair.is_some() => Err(PeerError::NotFound { peer, local }),
        Err(e) => Err(e),
        Ok(None) => Err(PeerError::NotFound { peer, local }),
    }
}

/// [`tcp_peer_uid`] for many connections at once, with one read of each table: reading
/// the tables costs the same for one connection as for a thousand (tens of milliseconds
/// on a busy host, where they list every socket), so connections that arrive together are
/// told together. Each pair is `(local, peer)`; the results are in the same order.
pub fn tcp_peer_uids(pairs: &[(SocketAddr, SocketAddr)]) -> Vec<Result<u32, PeerError>> {
    let mut found: Vec<Option<u32>> = vec![None; pairs.len()];
    // Rows wanted in tcp: (peer, local) as the peer's own socket prints them.
    let mut wanted: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (i, (local, peer)) in pairs.iter().enumerate() {
        if let (IpAddr::V4(_), IpAddr::V4(_)) = (local.ip(), peer.ip()) {
            wanted
                .entry((hex_address(*peer), hex_address(*local)))
                .or_default()
                .push(i);
        }
    }
    let v4 = if wanted.is_empty() {
        Ok(())
    } else {
        scan(TCP4, &wanted, &mut found)
    };
    // What tcp did not have may be a dual-stack socket in tcp6.
    let mut wanted6: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (i, (local, peer)) in pairs.iter().enumerate() {
        if found[i].is_none() {
            wanted6
                .entry((hex_address(v6_form(*peer)), hex_address(v6_form(*local))))
                .or_default()
                .push(i);
        }
    }
    let v6 = if wanted6.is_empty() {
        Ok(())
    } else {
        scan(TCP6, &wanted6, &mut found)
    };
    pairs
        .iter()
        .zip(found)
        .map(|(&(local, peer), uid)| {
            let is_v4 = local.is_ipv4() && peer.is_ipv4();
            match (uid, is_v4, &v4, &v6) {
                (Some(uid), ..) => Ok(uid),
                // A kernel without IPv6 has no tcp6: an error only where tcp6 was the table.
                (None, true, Err(e), _) | (None, false, _, Err(e)) => Err(PeerError::Read {
                    file: e.0,
                    source: io::Error::new(e.1, e.2.clone()),
                }),
                (None, ..) => Err(PeerError::NotFound { peer, local }),
            }
        })
        .collect()
}

/// Why a table could not be read, kept cloneable for every connection of a batch.
type ScanError = (&'static str, io::ErrorKind, String);

/// Scans one table for every wanted row at once (TIME_WAIT rows skipped, as in
/// [`find_uid`]); fills `found` for the rows seen.
fn scan(
    file: &'static str,
    wanted: &HashMap<(String, String), Vec<usize>>,
    found: &mut [Option<u32>],
) -> Result<(), ScanError> {
    let fail = |e: io::Error| (file, e.kind(), e.to_string());
    let table = File::open(file).map_err(fail)?;
    let mut left = wanted.values().map(Vec::len).sum::<usize>();
    for line in BufReader::new(table).lines().skip(1) {
        let line = line.map_err(fail)?;
        let mut fields = line.split_whitespace();
        let (Some(_), Some(local), Some(remote), Some(state)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if state == TIME_WAIT {
            continue;
        }
        let key = (local.to_ascii_uppercase(), remote.to_ascii_uppercase());
        let (Some(indices), Some(uid)) = (
            wanted.get(&key),
            fields.nth(3).and_then(|uid| uid.parse::<u32>().ok()),
        ) else {
            continue;
        };
        for &i in indices {
            if found[i].is_none() {
                found[i] = Some(uid);
                left -= 1;
            }
        }
        if left == 0 {
            break;
        }
    }
    Ok(())
}

fn search(file: &'static str, row_local: &str, row_remote: &str) -> Result<Option<u32>, PeerError> {
    let table = File::open(file).map_err(|source| PeerError::Read { file, source })?;
    find_uid(BufReader::new(table), row_local, row_remote)
        .map_err(|source| PeerError::Read { file, source })
}

/// Scans a `/proc/net/tcp`-format table for the row with these `local_address` and
/// `rem_address` (as the kernel prints them, see [`hex_address`]) and returns its uid.
/// Stops at the first match, so the kernel does not have to print the rest.
pub fn find_uid(table: impl BufRead, row_local: &str, row_remote: &str) -> io::Result<Option<u32>> {
    // The first line is the header.
    for line in table.lines().skip(1) {
        let line = line?;
        let mut fields = line.split_whitespace();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid …
        let (Some(_), Some(local), Some(remote), Some(state)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if !local.eq_ignore_ascii_case(row_local)
            || !remote.eq_ignore_ascii_case(row_remote)
            || state == TIME_WAIT
        {
            continue;
        }
        if let Some(uid) = fields.nth(3).and_then(|uid| uid.parse().ok()) {
            return Ok(Some(uid));
        }
    }
    Ok(None)
}

/// An address as the kernel prints it in its TCP tables: each 32-bit word of the address
/// in host byte order as 8 hex digits, then `:` and the port as 4 hex digits.
pub fn hex_address(addr: SocketAddr) -> String {
    let words = |octets: &[u8]| -> String {
        octets
            .chunks_exact(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect()
    };
    let ip = match addr.ip() {
        IpAddr::V4(ip) => words(&ip.octets()),
        IpAddr::V6(ip) => words(&ip.octets()),
    };
    format!("{ip}:{:04X}", addr.port())
}

fn v6_form(addr: SocketAddr) -> SocketAddr {
    let ip: Ipv6Addr = match addr.ip() {
        IpAddr::V4(ip) => ip.to_ipv6_mapped(),
        IpAddr::V6(ip) => ip,
    };
    SocketAddr::new(IpAddr::V6(ip), addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    const HEADER: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

    #[cfg(target_endian = "little")]
    #[test]
    fn addresses_are_printed_as_the_kernel_does() {
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, 8080));
        assert_eq!(hex_address(v4), "0100007F:1F90");
        assert_eq!(
            hex_address(v6_form(v4)),
            "0000000000000000FFFF00000100007F:1F90"
        );
        let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, 1));
        assert_eq!(hex_address(v6), "00000000000000000000000001000000:0001");
    }

    #[test]
    fn the_peer_row_is_the_one_pointing_back_at_us() {
        let table = format!(
            "{HEADER}\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1\n\
   2: 0100007F:C350 0100007F:1F90 06 00000000:00000000 03:00000A1B 00000000     0        0 0 3\n\
   3: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 3 1\n"
        );
        // Our own accepted socket (row 1, uid 0) and a TIME_WAIT row (uid 0) are skipped.
        assert_eq!(
            find_uid(table.as_bytes(), "0100007F:C350", "0100007F:1F90").unwrap(),
            Some(1000)
        );
        assert_eq!(
            find_uid(table.as_bytes(), "0100007F:C351", "0100007F:1F90").unwrap(),
            None
        );
    }

    #[test]
    fn many_connections_are_told_with_one_read_each() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut pairs = Vec::new();
        let mut keep = Vec::new();
        for _ in 0..20 {
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (accepted, peer) = listener.accept().unwrap();
            pairs.push((accepted.local_addr().unwrap(), peer));
            keep.push((client, accepted));
        }
        let gone = (pairs[0].0, SocketAddr::new(pairs[0].1.ip(), 1));
        pairs.push(gone);
        let uids = tcp_peer_uids(&pairs);
        assert_eq!(uids.len(), 21);
        for uid in &uids[..20] {
            assert_eq!(*uid.as_ref().unwrap(), crate::uid());
        }
        assert!(matches!(uids[20], Err(PeerError::NotFound { .. })));
        assert!(tcp_peer_uids(&[]).is_empty());
    }

    #[test]
    fn a_live_loopback_connection_is_ours() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        let local = accepted.local_addr().unwrap();
        assert_eq!(tcp_peer_uid(local, peer).unwrap(), crate::uid());
        // No connection comes from port 1.
        let err = tcp_peer_uid(local, SocketAddr::new(peer.ip(), 1)).unwrap_err();
        assert!(matches!(err, PeerError::NotFound { .. }), "{err}");
    }
}
