//! The words of `ctl web` (clap) and the requests they build.

use clap::Subcommand;
use landstrip_tray_core::surfaces::control::Request;

#[derive(Debug, Subcommand)]
pub(super) enum WebWords {
    /// Whether the phone page is on, its URL and its certificate's fingerprint
    Status,
    /// Serve the phone page (kept on across restarts until `web off`)
    #[command(
        long_about = "Serve the phone page over HTTPS, with a self-signed certificate made on \
first use (compare its fingerprint on the phone). By default it listens on loopback only, on a \
port chosen once and kept; --bind 0.0.0.0:PORT exposes it to the local network. It stays on \
across restarts of the app until `ctl web off`. --json prints {\"url\", \"fingerprint\"}."
    )]
    On {
        /// The address to listen on, ADDRESS:PORT (default: the saved one, or 127.0.0.1 on a
        /// port chosen once)
        #[arg(long, value_name = "ADDR:PORT")]
        bind: Option<String>,
    },
    /// Stop serving the phone page (kept off)
    Off,
    /// A single-use pairing URL, valid 10 minutes, with its QR code and the fingerprint
    Pair,
    /// The paired devices and their last use
    Devices,
    /// End a paired device at once (its id or name, see `web devices`)
    Revoke {
        /// The device's id or name
        #[arg(value_name = "DEVICE")]
        device: String,
    },
}

impl WebWords {
    /// The request these words ask for.
    pub(super) fn request(self) -> Request {
        match self {
            WebWords::Status => Request::Web,
            WebWords::On { bind } => Request::WebOn { bind },
            WebWords::Off => Request::WebOff,
            WebWords::Pair => Request::WebPair,
            WebWords::Devices => Request::WebDevices,
            WebWords::Revoke { device } => Request::WebRevoke { device },
        }
    }
}
