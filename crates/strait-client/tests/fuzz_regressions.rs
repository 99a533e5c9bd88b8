//! Inputs the fuzz targets in `fuzz/` found, kept as tests (see `fuzz/README.md`).

use bytes::Bytes;
use strait_client::decode_response;
use strait_client::kafka_protocol::messages::{ApiKey, MetadataResponse};

/// `client_decode_response`: a MetadataResponse v0 frame (correlation id 5) whose brokers array
/// claims 0x1c00_0000 elements in a 22-byte frame. kafka-protocol 0.18.0 as released reserves
/// room for the claimed count before reading an element, so this asked for 45 GiB, and the
/// failed allocation aborted the process (and would abort this test binary). The vendored,
/// patched copy (`vendor/README.md`) caps the reservation by the bytes left.
#[test]
fn a_metadata_response_claiming_2_pow_28_brokers_is_an_error() {
    let frame = Bytes::from_static(&[
        0x00, 0x00, 0x00, 0x05, // correlation id
        0x1c, 0x00, 0x00, 0x00, // brokers: 469,762,048 of them
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]);
    let error = decode_response::<MetadataResponse>(ApiKey::Metadata, 0, frame).unwrap_err();
    assert!(error.to_string().starts_with("Metadata v0: "), "{error}");
}

/// The same through a compact (flexible-version) array: MetadataResponse v12 claiming
/// 2^32 - 2 brokers, which as released asked for about 400 GiB.
#[test]
fn a_flexible_metadata_response_claiming_2_pow_32_brokers_is_an_error() {
    let frame = Bytes::from_static(&[
        0x00, 0x00, 0x00, 0x05, // correlation id
        0x00, // no tagged fields in the header
        0x00, 0x00, 0x00, 0x00, // throttle time
        0xff, 0xff, 0xff, 0xff, 0x0f, // brokers: unsigned varint 2^32 - 1, so 2^32 - 2 of them
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    ]);
    let error = decode_response::<MetadataResponse>(ApiKey::Metadata, 12, frame).unwrap_err();
    assert!(error.to_string().starts_with("Metadata v12: "), "{error}");
}
