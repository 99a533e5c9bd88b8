//! The batch path in isolation: split a fetched records blob into batches, check each source
//! CRC, rewrite each header with a producer identity and a fresh CRC, and build the Produce request parts; next to
//! memcpy and CRC-32C of the same bytes, which bound what any mirror must spend. Also the slow
//! path (decompress, rebuild, recompress) per codec.

// criterion_group! generates a public function that cannot carry a doc comment.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strait_benches::fetched_records;
use strait_client::{encode_produce_request, PartitionRecords, TopicRecords};
use strait_wire::{rebuild_batch, Compression, ProducerState, RecordBatches};

const CODECS: [Compression; 3] = [Compression::None, Compression::Lz4, Compression::Zstd];

fn fast_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("batch_path");
    for codec in CODECS {
        // 8 MiB-ish of 1 KiB records in 16 KiB-ish batches, as a Java producer writes them.
        let records = fetched_records(512, 16, 1024, codec);
        group.throughput(Throughput::Bytes(records.len() as u64));
        group.bench_with_input(BenchmarkId::new("forward", codec.name()), &records, |b, records| {
            b.iter(|| {
                let mut sequence = 0;
                let mut bytes = 0;
                for batch in RecordBatches::new(records.clone()) {
                    let batch = batch.expect("valid batch");
                    batch.verify_crc().expect("intact batch");
                    let state = ProducerState {
                        producer_id: 7,
                        producer_epoch: 0,
                        base_sequence: sequence,
                        transactional: false,
                    };
                    sequence += batch.records_count();
                    let parts = batch.rewrite(state).expect("forwardable").into_parts();
                    let topics = [TopicRecords {
                        topic: strait_client::topic_name("source.orders"),
                        partitions: vec![PartitionRecords {
                            partition: 0,
                            records: parts,
                        }],
                    }];
                    bytes += encode_produce_request(9, None, -1, 30_000, &topics)
                        .iter()
                        .map(|p| p.len())
                        .sum::<usize>();
                }
                bytes
            })
        });
        group.bench_with_input(BenchmarkId::new("memcpy", codec.name()), &records, |b, records| {
            let mut out = vec![0u8; records.len()];
            b.iter(|| {
                out.copy_from_slice(records);
                out[0]
            })
        });
        group.bench_with_input(BenchmarkId::new("crc32c", codec.name()), &records, |b, records| {
            b.iter(|| crc32c::crc32c(records))
        });
    }
    group.finish();
}

fn slow_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("slow_path");
    group.sample_size(10);
    for codec in CODECS {
        let records = fetched_records(64, 16, 1024, codec);
        group.throughput(Throughput::Bytes(records.len() as u64));
        group.bench_with_input(BenchmarkId::new("rebuild", codec.name()), &records, |b, records| {
            b.iter(|| {
                RecordBatches::new(records.clone())
                    .map(|batch| {
                        rebuild_batch(&batch.expect("valid"), 0)
                            .expect("rebuilt")
                            .map_or(0, |r| r.batch.size())
                    })
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, fast_path, slow_path);
criterion_main!(benches);
