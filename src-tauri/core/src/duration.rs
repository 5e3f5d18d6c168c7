//! Durations as people type them (`90s`, `15m`, `1h30m`, `2d`), read and written back the
//! same way: `ctl pause`, `ctl policy learn --since`, and how long a session grant lives.

/// `90s`, `15m`, `1h`, `1h30m`, `2d`, or bare seconds (`90`), as seconds; None if it is
/// none of those or zero.
pub fn parse_duration(text: &str) -> Option<u64> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok().filter(|&s| s > 0);
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        let n: u64 = std::mem::take(&mut number).parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    (number.is_empty() && total > 0).then_some(total)
}

/// Seconds written the way [`parse_duration`] reads them, largest units first: `90` is
/// `1m30s`, `3600` is `1h`, `0` is `0s`.
pub fn format_duration(secs: u64) -> String {
    if secs == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    let mut left = secs;
    for (unit, name) in [(86_400, 'd'), (3600, 'h'), (60, 'm'), (1, 's')] {
        if left >= unit {
            out.push_str(&(left / unit).to_string());
            out.push(name);
            left %= unit;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_write_back_the_same() {
        assert_eq!(parse_duration("90"), Some(90));
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("15m"), Some(900));
        assert_eq!(parse_duration("1h30m"), Some(5400));
        assert_eq!(parse_duration("2d"), Some(172_800));
        for bad in [
            "",
            "0",
            "0s",
            "m",
            "1x",
            "1h30",
            "-5m",
            "99999999999999999999s",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        for secs in [1, 59, 90, 900, 3600, 5400, 86_400, 90_061] {
            assert_eq!(parse_duration(&format_duration(secs)), Some(secs));
        }
        assert_eq!(format_duration(90), "1m30s");
        assert_eq!(format_duration(3600), "1h");
    }
}
