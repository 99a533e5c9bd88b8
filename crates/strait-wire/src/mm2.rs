//! MirrorMaker 2's internal records, byte-compatible with MM2's Java classes `OffsetSync`,
//! `Checkpoint` and `Heartbeat` (connect-mirror-client): protocol primitives, big-endian
//! integers and INT16-length strings, no tags; readers ignore trailing bytes.

use bytes::{BufMut, Bytes, BytesMut};

use crate::WireError;

/// Where one replicated record sits upstream and downstream (topic
/// `mm2-offset-syncs.<cluster>.internal`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetSync {
    /// The upstream (source) topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The record's offset in the source partition.
    pub upstream_offset: i64,
    /// The same record's offset in the target partition.
    pub downstream_offset: i64,
}

/// A consumer group's translated position (topic `<source>.checkpoints.internal` on the target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The consumer group.
    pub group: String,
    /// The downstream (target) topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// The offset to use on the target.
    pub downstream_offset: i64,
    /// The commit's metadata (empty if none).
    pub metadata: String,
}

/// A liveness record (topic `heartbeats`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The source cluster alias.
    pub source_cluster_alias: String,
    /// The target cluster alias.
    pub target_cluster_alias: String,
    /// Emission time, epoch milliseconds.
    pub timestamp: i64,
}

impl OffsetSync {
    /// The record key: topic, partition.
    pub fn key(&self) -> Bytes {
        let mut out = BytesMut::new();
        put_string(&mut out, &self.topic);
        out.put_i32(self.partition);
        out.freeze()
    }

    /// The record value: upstream offset, downstream offset.
    pub fn value(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(16);
        out.put_i64(self.upstream_offset);
        out.put_i64(self.downstream_offset);
        out.freeze()
    }

    /// Decodes a record of the offset-syncs topic.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<OffsetSync, WireError> {
        let (mut k, mut v) = (
            Reader::new(key, "OffsetSync key"),
            Reader::new(value, "OffsetSync value"),
        );
        Ok(OffsetSync {
            topic: k.string()?,
            partition: k.i32()?,
            upstream_offset: v.i64()?,
            downstream_offset: v.i64()?,
        })
    }
}

impl Checkpoint {
    /// The record key: group, topic, partition.
    pub fn key(&self) -> Bytes {
        let mut out = BytesMut::new();
        put_string(&mut out, &self.group);
        put_string(&mut out, &self.topic);
        out.put_i32(self.partition);
        out.freeze()
    }

    /// The record value: version 0, upstream offset, downstream offset, metadata.
    pub fn value(&self) -> Bytes {
        let mut out = BytesMut::new();
        out.put_i16(0);
        out.put_i64(self.upstream_offset);
        out.put_i64(self.downstream_offset);
        put_string(&mut out, &self.metadata);
        out.freeze()
    }

    /// Decodes a record of a checkpoints topic (any version is read as v0, as MM2 does).
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Checkpoint, WireError> {
        let (mut k, mut v) = (
            Reader::new(key, "Checkpoint key"),
            Reader::new(value, "Checkpoint value"),
        );
        let (group, topic, partition) = (k.string()?, k.string()?, k.i32()?);
        let _version = v.i16()?;
        Ok(Checkpoint {
            group,
            topic,
            partition,
            upstream_offset: v.i64()?,
            downstream_offset: v.i64()?,
            metadata: v.string()?,
        })
    }
}

impl Heartbeat {
    /// The record key: source alias, target alias.
    pub fn key(&self) -> Bytes {
        let mut out = BytesMut::new();
        put_string(&mut out, &self.source_cluster_alias);
        put_string(&mut out, &self.target_cluster_alias);
        out.freeze()
    }

    /// The record value: version 0, timestamp.
    pub fn value(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(10);
        out.put_i16(0);
        out.put_i64(self.timestamp);
        out.freeze()
    }

    /// Decodes a record of a heartbeats topic.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Heartbeat, WireError> {
        let (mut k, mut v) = (Reader::new(key, "Heartbeat key"), Reader::new(value, "Heartbeat value"));
        let (source_cluster_alias, target_cluster_alias) = (k.string()?, k.string()?);
        let _version = v.i16()?;
        Ok(Heartbeat {
            source_cluster_alias,
            target_cluster_alias,
            timestamp: v.i64()?,
        })
    }
}

fn put_string(out: &mut BytesMut, s: &str) {
    // Kafka's STRING type: at most 32767 bytes. Aliases, topics and groups are far shorter;
    // longer metadata is cut at a character boundary rather than written unreadable.
    let mut end = s.len().min(i16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.put_i16(end as i16);
    out.put_slice(&s.as_bytes()[..end]);
}

struct Reader<'a> {
    data: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, what }
    }

    fn malformed(&self, reason: &'static str) -> WireError {
        WireError::MalformedInternalRecord {
            record: self.what,
            reason,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.data.len() < n {
            return Err(self.malformed("truncated"));
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    fn i16(&mut self) -> Result<i16, WireError> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }

    fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn i64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn string(&mut self) -> Result<String, WireError> {
        let len = self.i16()?;
        let len = usize::try_from(len).map_err(|_| self.malformed("negative string length"))?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.malformed("string is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::hex;

    #[test]
    fn offset_sync_matches_mm2_bytes() {
        let sync = OffsetSync {
            topic: "topic-1".into(),
            partition: 2,
            upstream_offset: 3,
            downstream_offset: 4,
        };
        assert_eq!(sync.key().to_vec(), hex("00 07 74 6f 70 69 63 2d 31 00 00 00 02"));
        assert_eq!(
            sync.value().to_vec(),
            hex("00 00 00 00 00 00 00 03 00 00 00 00 00 00 00 04")
        );
        assert_eq!(OffsetSync::decode(&sync.key(), &sync.value()).unwrap(), sync);
    }

    #[test]
    fn checkpoint_matches_mm2_bytes() {
        let checkpoint = Checkpoint {
            group: "group-1".into(),
            topic: "topic-2".into(),
            partition: 3,
            upstream_offset: 4,
            downstream_offset: 5,
            metadata: "metadata-6".into(),
        };
        assert_eq!(
            checkpoint.key().to_vec(),
            hex("00 07 67 72 6f 75 70 2d 31 00 07 74 6f 70 69 63 2d 32 00 00 00 03")
        );
        assert_eq!(
            checkpoint.value().to_vec(),
            hex("00 00 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00 05 00 0a 6d 65 74 61 64 61 74 61 2d 36")
        );
        assert_eq!(
            Checkpoint::decode(&checkpoint.key(), &checkpoint.value()).unwrap(),
            checkpoint
        );
        let empty = Checkpoint {
            upstream_offset: 250,
            downstream_offset: 201,
            metadata: String::new(),
            ..checkpoint
        };
        assert_eq!(
            empty.value().to_vec(),
            hex("00 00 00 00 00 00 00 00 00 fa 00 00 00 00 00 00 00 c9 00 00")
        );
    }

    #[test]
    fn heartbeat_matches_mm2_bytes() {
        let heartbeat = Heartbeat {
            source_cluster_alias: "source-1".into(),
            target_cluster_alias: "target-2".into(),
            timestamp: 1_234_567_890,
        };
        assert_eq!(
            heartbeat.key().to_vec(),
            hex("00 08 73 6f 75 72 63 65 2d 31 00 08 74 61 72 67 65 74 2d 32")
        );
        assert_eq!(heartbeat.value().to_vec(), hex("00 00 00 00 00 00 49 96 02 d2"));
        assert_eq!(
            Heartbeat::decode(&heartbeat.key(), &heartbeat.value()).unwrap(),
            heartbeat
        );
    }

    #[test]
    fn malformed_records_are_errors_naming_the_record() {
        let err = OffsetSync::decode(&hex("00 07 74 6f"), &[]).unwrap_err();
        assert_eq!(
            err,
            WireError::MalformedInternalRecord {
                record: "OffsetSync key",
                reason: "truncated"
            }
        );
        assert_eq!(err.to_string(), "MirrorMaker 2 OffsetSync key is malformed: truncated");
        let err = Checkpoint::decode(&hex("ff ff"), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "MirrorMaker 2 Checkpoint key is malformed: negative string length"
        );
        let err = Heartbeat::decode(&hex("00 01 ff 00 00"), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "MirrorMaker 2 Heartbeat key is malformed: string is not UTF-8"
        );
        let err = Heartbeat::decode(&hex("00 00 00 00"), &hex("00 00 01")).unwrap_err();
        assert_eq!(err.to_string(), "MirrorMaker 2 Heartbeat value is malformed: truncated");
    }
}
