//! Which versions of each API Strait speaks.

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;

/// The versions Strait speaks for `api`: what kafka-protocol encodes, capped where a newer
/// version would change how we address things.
///
/// Produce and Fetch stop at v12: v13 (Produce) and v13+ (Fetch) name topics by topic id, and
/// the mirror addresses topics by name on both clusters (ids differ between clusters anyway).
pub(crate) fn client_versions(api: ApiKey) -> VersionRange {
    let all = api.valid_versions();
    let cap = match api {
        ApiKey::Produce | ApiKey::Fetch => 12,
        _ => all.max,
    };
    VersionRange {
        min: all.min,
        max: all.max.min(cap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn produce_and_fetch_address_topics_by_name() {
        assert_eq!(client_versions(ApiKey::Produce), VersionRange { min: 3, max: 12 });
        assert_eq!(client_versions(ApiKey::Fetch), VersionRange { min: 4, max: 12 });
        assert_eq!(client_versions(ApiKey::Metadata).max, 13);
    }
}
