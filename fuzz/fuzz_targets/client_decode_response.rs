//! `strait_client::decode_response` for the four responses the client reads on its hot and
//! start-up paths: Fetch, Produce, Metadata and ApiVersions. The first input byte picks the API
//! (low 2 bits) and the version (the rest, modulo the versions the client speaks, see
//! `strait-client/src/versions.rs`); the remaining bytes are the frame after the size prefix
//! (response header and body). A decoded Fetch response goes on the way `KafkaClient::fetch` and
//! the mirror use it: error codes checked, then its records split into batches and run through
//! the read_committed filter with the response's aborted transactions.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strait_client::kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, FetchResponse, MetadataResponse, ProduceResponse,
};
use strait_client::{aborted_transactions, decode_response, Error};
use strait_wire::{AbortedTransactionFilter, RecordBatches};

/// The versions `strait-client` speaks for `api` (`versions::client_versions`, which is private):
/// all that kafka-protocol knows, with Produce and Fetch capped at v12.
fn pick_version(api: ApiKey, selector: u8) -> i16 {
    let all = api.valid_versions();
    let max = match api {
        ApiKey::Produce | ApiKey::Fetch => all.max.min(12),
        _ => all.max,
    };
    let span = (max - all.min + 1) as u8;
    all.min + i16::from(selector % span)
}

fn check(code: i16) {
    let _ = Error::check(code, || "fuzz".to_owned(), None).map_err(|e| (e.to_string(), e.is_retriable()));
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, frame)) = data.split_first() else {
        return;
    };
    let frame = Bytes::copy_from_slice(frame);
    let api = [ApiKey::Fetch, ApiKey::Produce, ApiKey::Metadata, ApiKey::ApiVersions][usize::from(selector & 3)];
    let version = pick_version(api, selector >> 2);
    match api {
        ApiKey::Fetch => {
            let Ok(response) = decode_response::<FetchResponse>(api, version, frame) else {
                return;
            };
            check(response.error_code);
            for partition in response.responses.into_iter().flat_map(|t| t.partitions) {
                check(partition.error_code);
                let mut filter = AbortedTransactionFilter::new(aborted_transactions(&partition));
                let mut batches = RecordBatches::new(partition.records.unwrap_or_default());
                for batch in batches.by_ref().flatten() {
                    let _ = (filter.check(&batch), batch.next_offset(), batch.verify_crc());
                }
                let _ = batches.partial_tail();
            }
        }
        ApiKey::Produce => {
            if let Ok(response) = decode_response::<ProduceResponse>(api, version, frame) {
                for partition in response.responses.iter().flat_map(|t| &t.partition_responses) {
                    check(partition.error_code);
                }
            }
        }
        ApiKey::Metadata => {
            if let Ok(response) = decode_response::<MetadataResponse>(api, version, frame) {
                for topic in &response.topics {
                    check(topic.error_code);
                }
            }
        }
        _ => {
            if let Ok(response) = decode_response::<ApiVersionsResponse>(api, version, frame) {
                check(response.error_code);
            }
        }
    }
});
