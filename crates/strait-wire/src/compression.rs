//! The four codecs, in the byte formats Kafka's Java client uses inside record batches: a gzip
//! stream, snappy-java's framed stream, an LZ4 frame and a Zstandard frame.

use std::io::{Read, Write};

use bytes::Bytes;

use crate::{Compression, WireError};

/// snappy-java's stream magic ("\x82SNAPPY\0"), which its 16-byte header starts with.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// The full header snappy-java writes: magic, version 1, minimum compatible version 1.
const XERIAL_HEADER: [u8; 16] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
/// The block size snappy-java writes.
const XERIAL_BLOCK: usize = 32 * 1024;
/// Snappy output is at most ~22 times its input (a 3-byte copy yields 64 bytes), so a block
/// claiming more is corrupt; checked because the claimed size is allocated up front.
const SNAPPY_MAX_RATIO: usize = 32;

/// The most a batch's records may take uncompressed. Kafka sets no such limit, but without one
/// a 1 MiB zstd batch of zeros would ask for about 32 GiB and end the process (a
/// decompression bomb, or corrupt data); as large as the largest response frame Strait reads.
pub(crate) const MAX_DECOMPRESSED: usize = 256 * 1024 * 1024;

/// Decompresses a batch's records section; uncompressed data comes back as the same buffer.
pub(crate) fn decompress(codec: Compression, data: Bytes, base_offset: i64) -> Result<Bytes, WireError> {
    decompress_at_most(codec, data, base_offset, MAX_DECOMPRESSED)
}

/// [`decompress`], refusing output over `limit` bytes.
fn decompress_at_most(codec: Compression, data: Bytes, base_offset: i64, limit: usize) -> Result<Bytes, WireError> {
    let plain = match codec {
        Compression::None => return Ok(data),
        // Kafka reads gzip with Java's GZIPInputStream, which also reads concatenated members.
        Compression::Gzip => read_all(flate2::read::MultiGzDecoder::new(&data[..]), data.len(), limit),
        Compression::Lz4 => read_all(lz4_flex::frame::FrameDecoder::new(&data[..]), data.len(), limit),
        Compression::Zstd => zstd::stream::read::Decoder::new(&data[..])
            .map_err(|e| e.to_string())
            .and_then(|decoder| read_all(decoder, data.len(), limit)),
        Compression::Snappy => snappy_decompress(&data, limit),
    };
    plain.map(Bytes::from).map_err(|reason| WireError::Decompression {
        base_offset,
        codec,
        reason,
    })
}

fn read_all(reader: impl Read, compressed_len: usize, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(compressed_len.saturating_mul(4).min(limit));
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

fn too_large(limit: usize) -> String {
    format!("more than {limit} bytes uncompressed, the most Strait accepts in one batch (corrupt data, or a decompression bomb)")
}

/// Reads snappy-java's framing (header, then blocks of i32 length + raw snappy block) or, as
/// snappy-java does for data without the header, one raw snappy block.
fn snappy_decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut decoder = snap::raw::Decoder::new();
    let mut block = |block: &[u8]| -> Result<(), String> {
        let len = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
        if len > block.len().saturating_mul(SNAPPY_MAX_RATIO) {
            return Err(format!(
                "a {}-byte snappy block claims {len} bytes uncompressed",
                block.len()
            ));
        }
        let start = out.len();
        if start + len > limit {
            return Err(too_large(limit));
        }
        out.resize(start + len, 0);
        let written = decoder
            .decompress(block, &mut out[start..])
            .map_err(|e| e.to_string())?;
        out.truncate(start + written);
        Ok(())
    };
    if data.starts_with(&XERIAL_MAGIC) {
        let mut rest = data.get(XERIAL_HEADER.len()..).ok_or("truncated snappy-java header")?;
        while !rest.is_empty() {
            let (length, tail) = rest
                .split_first_chunk::<4>()
                .ok_or("truncated snappy-java block length")?;
            let length = u32::from_be_bytes(*length) as usize;
            block(tail.get(..length).ok_or("truncated snappy-java block")?)?;
            rest = &tail[length..];
        }
    } else {
        block(data)?;
    }
    Ok(out)
}

/// Compresses a records section the way Kafka's Java producer frames it.
///
/// None of the codecs can fail on in-memory data of a batch's size; the `expect`s say why.
pub(crate) fn compress(codec: Compression, data: Vec<u8>) -> Vec<u8> {
    match codec {
        Compression::None => data,
        Compression::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(&data).expect("writing to a Vec does not fail");
            encoder.finish().expect("writing to a Vec does not fail")
        }
        Compression::Lz4 => {
            // Independent blocks, as Kafka's reader decompresses each block on its own.
            let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
            encoder.write_all(&data).expect("writing to a Vec does not fail");
            encoder.finish().expect("writing to a Vec does not fail")
        }
        Compression::Zstd => zstd::bulk::compress(&data, 3).expect("level 3 is valid and the output is a Vec"),
        Compression::Snappy => {
            let mut out = XERIAL_HEADER.to_vec();
            let mut encoder = snap::raw::Encoder::new();
            for block in data.chunks(XERIAL_BLOCK) {
                let compressed = encoder
                    .compress_vec(block)
                    .expect("a 32 KiB block is within snappy's limits");
                out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::CODECS;

    /// 400 KB with some repetition: several snappy-java blocks and LZ4 blocks.
    fn data() -> Vec<u8> {
        (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect()
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in CODECS {
            let compressed = compress(codec, data());
            if codec != Compression::None {
                assert!(compressed.len() < data().len(), "{codec}");
            }
            assert_eq!(decompress(codec, compressed.into(), 0).unwrap(), data(), "{codec}");
        }
        assert_eq!(
            decompress(Compression::Gzip, compress(Compression::Gzip, vec![]).into(), 0).unwrap(),
            ""
        );
    }

    #[test]
    fn uncompressed_data_is_not_copied() {
        let data = Bytes::from(data());
        assert_eq!(
            decompress(Compression::None, data.clone(), 0).unwrap().as_ptr(),
            data.as_ptr()
        );
    }

    #[test]
    fn snappy_uses_snappy_java_framing_and_also_reads_raw_blocks() {
        let compressed = compress(Compression::Snappy, data());
        assert_eq!(&compressed[..16], &XERIAL_HEADER);
        let first = u32::from_be_bytes(compressed[16..20].try_into().unwrap()) as usize;
        let block = &compressed[20..20 + first];
        assert_eq!(snap::raw::decompress_len(block).unwrap(), XERIAL_BLOCK);

        let raw = snap::raw::Encoder::new().compress_vec(b"unframed snappy").unwrap();
        assert_eq!(
            decompress(Compression::Snappy, raw.into(), 0).unwrap(),
            "unframed snappy"
        );
    }

    #[test]
    fn output_over_the_limit_is_refused_in_every_codec() {
        let limit = data().len();
        for codec in CODECS.into_iter().skip(1) {
            let compressed = Bytes::from(compress(codec, data()));
            let exact = decompress_at_most(codec, compressed.clone(), 7, limit).unwrap();
            assert_eq!(exact.len(), limit, "{codec}");
            let error = decompress_at_most(codec, compressed, 7, limit - 1)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(&format!("more than {} bytes uncompressed", limit - 1)),
                "{codec}: {error}"
            );
        }
    }

    #[test]
    fn a_zstd_bomb_is_refused() {
        // 300 MiB of zeros in a few KiB, written in pieces so the test never holds 300 MiB.
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..300 {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 64 * 1024, "{} bytes", bomb.len());
        let error = decompress(Compression::Zstd, bomb.into(), 42).unwrap_err().to_string();
        assert!(error.contains("more than 268435456 bytes uncompressed"), "{error}");
    }

    #[test]
    fn concatenated_gzip_members_are_read() {
        let mut two = compress(Compression::Gzip, b"first ".to_vec());
        two.extend(compress(Compression::Gzip, b"second".to_vec()));
        assert_eq!(decompress(Compression::Gzip, two.into(), 0).unwrap(), "first second");
    }

    #[test]
    fn garbage_is_an_error_that_names_the_batch_and_codec() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let err = decompress(codec, Bytes::from_static(b"\xffnot compressed"), 42).unwrap_err();
            assert!(matches!(err, WireError::Decompression { base_offset: 42, codec: c, .. } if c == codec));
            assert!(
                err.to_string()
                    .starts_with(&format!("batch at offset 42: {codec} decompression failed: ")),
                "{err}"
            );
        }
        let truncated = [
            (&XERIAL_HEADER[..12], "truncated snappy-java header"),
            (
                &[&XERIAL_HEADER[..], &[0, 0, 1]].concat()[..],
                "truncated snappy-java block length",
            ),
            (
                &[&XERIAL_HEADER[..], &[0, 0, 0, 9, 1]].concat()[..],
                "truncated snappy-java block",
            ),
        ];
        for (bytes, reason) in truncated {
            let err = decompress(Compression::Snappy, Bytes::copy_from_slice(bytes), 7).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("batch at offset 7: snappy decompression failed: {reason}")
            );
        }
    }

    #[test]
    fn a_snappy_block_claiming_gigabytes_is_refused_before_allocating() {
        // Varint 0xffffffff: the block claims 4 GiB.
        let bomb = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
        let err = decompress(Compression::Snappy, bomb, 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "batch at offset 1: snappy decompression failed: a 6-byte snappy block claims 4294967295 bytes uncompressed"
        );
    }
}
