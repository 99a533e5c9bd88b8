//! The four codecs, in the byte formats Kafka uses inside record batches.

use std::io::{Read, Write};

use crate::{Compression, WireError};

/// The xerial snappy-java stream header: magic, then version 1 and compatible version 1.
const XERIAL_HEADER: [u8; 16] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
/// Block size snappy-java uses when writing.
const XERIAL_BLOCK: usize = 32 * 1024;

/// Decompresses a batch's records section.
pub(crate) fn decompress(codec: Compression, data: &[u8], base_offset: i64) -> Result<Vec<u8>, WireError> {
    let fail = |reason: String| WireError::Codec {
        base_offset,
        codec: codec.name(),
        operation: "decompression",
        reason,
    };
    let mut out = Vec::with_capacity(data.len() * 4);
    match codec {
        Compression::None => out.extend_from_slice(data),
        Compression::Gzip => {
            flate2::read::GzDecoder::new(data)
                .read_to_end(&mut out)
                .map_err(|e| fail(e.to_string()))?;
        }
        Compression::Lz4 => {
            lz4_flex::frame::FrameDecoder::new(data)
                .read_to_end(&mut out)
                .map_err(|e| fail(e.to_string()))?;
        }
        Compression::Zstd => {
            zstd::stream::read::Decoder::new(data)
                .and_then(|mut d| d.read_to_end(&mut out))
                .map_err(|e| fail(e.to_string()))?;
        }
        Compression::Snappy => {
            let mut decoder = snap::raw::Decoder::new();
            if data.starts_with(&XERIAL_HEADER[..8]) {
                let mut rest = data.get(16..).ok_or_else(|| fail("truncated xerial header".into()))?;
                while !rest.is_empty() {
                    let len = rest
                        .get(..4)
                        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize);
                    let block = len
                        .and_then(|len| rest.get(4..4 + len))
                        .ok_or_else(|| fail("truncated xerial block".into()))?;
                    out.extend(decoder.decompress_vec(block).map_err(|e| fail(e.to_string()))?);
                    rest = &rest[4 + block.len()..];
                }
            } else {
                out = decoder.decompress_vec(data).map_err(|e| fail(e.to_string()))?;
            }
        }
    }
    Ok(out)
}

/// Compresses a records section the way Kafka's Java producer frames it.
pub(crate) fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>, WireError> {
    let fail = |reason: String| WireError::Codec {
        base_offset: 0,
        codec: codec.name(),
        operation: "compression",
        reason,
    };
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder
                .write_all(data)
                .and_then(|()| encoder.finish())
                .map_err(|e| fail(e.to_string()))
        }
        Compression::Lz4 => {
            let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
            encoder.write_all(data).map_err(|e| fail(e.to_string()))?;
            encoder.finish().map_err(|e| fail(e.to_string()))
        }
        Compression::Zstd => zstd::bulk::compress(data, 3).map_err(|e| fail(e.to_string())),
        Compression::Snappy => {
            let mut out = XERIAL_HEADER.to_vec();
            let mut encoder = snap::raw::Encoder::new();
            for block in data.chunks(XERIAL_BLOCK) {
                let compressed = encoder.compress_vec(block).map_err(|e| fail(e.to_string()))?;
                out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let compressed = compress(codec, &data).unwrap();
            assert_eq!(decompress(codec, &compressed, 0).unwrap(), data, "{codec:?}");
        }
    }

    #[test]
    fn garbage_is_an_error_that_names_the_codec() {
        let err = decompress(Compression::Zstd, b"not zstd", 42).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("batch at offset 42: zstd decompression failed"),
            "{err}"
        );
        let err = decompress(Compression::Snappy, &XERIAL_HEADER[..12], 7).unwrap_err();
        assert!(err.to_string().contains("truncated xerial header"), "{err}");
    }
}
