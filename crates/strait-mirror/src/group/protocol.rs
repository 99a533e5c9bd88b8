//! What members tell the leader in JoinGroup ([`MemberMetadata`]) and what the leader hands each
//! member in SyncGroup ([`MemberAssignment`]).
//!
//! The encoding is Strait's own and compact, since every member's metadata travels in the one
//! JoinGroup response the leader reads: a version byte (0), then unsigned LEB128 varints (zigzag
//! for signed values), strings as a varint length and UTF-8, and each topic's partitions sorted
//! ascending and delta-encoded, their rates after them in the same order. Decoding checks every
//! length against the bytes left, so no member can make another panic or allocate beyond the size
//! of what it sent.

use bytes::{BufMut, Bytes, BytesMut};

/// The protocol name members offer in JoinGroup.
pub(crate) const PROTOCOL: &str = "strait-cooperative-sticky";

const VERSION: u8 = 0;

/// One topic's partitions of a flow, with each partition's measured rate (bytes/s) in the same
/// order (rates may be empty in assignments).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct TopicUnits {
    /// The source topic.
    pub topic: String,
    /// Its partitions (decoded in ascending order).
    pub partitions: Vec<i32>,
    /// One rate per partition, or none: rates are only encoded when there is one per partition.
    pub rates: Vec<u64>,
}

/// The units of one flow: its singleton and source partitions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FlowUnits {
    /// The flow's name (`A->B`).
    pub flow: String,
    /// The flow's singleton jobs.
    pub singleton: bool,
    /// Source partitions by topic.
    pub topics: Vec<TopicUnits>,
}

/// What a member sends in JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct MemberMetadata {
    /// Setting names with a 32-bit hash of each value, for the leader to refuse a member that
    /// is configured differently.
    pub config: Vec<(String, u32)>,
    /// The generation `owned` was held in; -1 if none.
    pub generation: i32,
    /// The units the member holds, with their rates.
    pub owned: Vec<FlowUnits>,
}

/// What the leader sends each member in SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct MemberAssignment {
    /// Why the member gets nothing, if the leader refused it.
    pub refused: Option<String>,
    /// How many members share the work (the refused not counted).
    pub members: u32,
    /// The generation the leader assigned in (for `strait status`, which reads assignments
    /// with DescribeGroups: its answer has none).
    pub generation: i32,
    /// The units the member holds this generation.
    pub units: Vec<FlowUnits>,
}

/// Metadata or an assignment that cannot be decoded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ProtocolError(pub String);

impl MemberMetadata {
    /// Encodes for JoinGroup's protocol metadata.
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_u8(VERSION);
        put_varint(&mut buf, self.config.len() as u64);
        for (name, hash) in &self.config {
            put_str(&mut buf, name);
            put_varint(&mut buf, u64::from(*hash));
        }
        put_varint(&mut buf, zigzag(self.generation));
        put_flows(&mut buf, &self.owned);
        buf.freeze()
    }

    /// Decodes what [`MemberMetadata::encode`] wrote.
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new(bytes, "member metadata")?;
        let count = r.count("configuration count")?;
        let mut config = Vec::with_capacity(count);
        for _ in 0..count {
            config.push((r.string("setting name")?, r.u32("setting hash")?));
        }
        let generation = r.i32("generation")?;
        let owned = r.flows()?;
        r.finish()?;
        Ok(MemberMetadata {
            config,
            generation,
            owned,
        })
    }
}

impl MemberAssignment {
    /// Encodes for SyncGroup's assignment.
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_u8(VERSION);
        buf.put_u8(u8::from(self.refused.is_some()));
        if let Some(reason) = &self.refused {
            put_str(&mut buf, reason);
        }
        put_varint(&mut buf, u64::from(self.members));
        put_varint(&mut buf, zigzag(self.generation));
        put_flows(&mut buf, &self.units);
        buf.freeze()
    }

    /// How many source partitions it assigns.
    pub fn partition_count(&self) -> usize {
        self.units
            .iter()
            .flat_map(|f| &f.topics)
            .map(|t| t.partitions.len())
            .sum()
    }

    /// Decodes what [`MemberAssignment::encode`] wrote; empty bytes are an empty assignment, as
    /// the coordinator hands a member the leader gave nothing.
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtocolError> {
        if bytes.is_empty() {
            return Ok(MemberAssignment::default());
        }
        let mut r = Reader::new(bytes, "member assignment")?;
        let refused = if r.flag("refusal flag")? {
            Some(r.string("refusal reason")?)
        } else {
            None
        };
        let members = r.u32("member count")?;
        let generation = r.i32("generation")?;
        let units = r.flows()?;
        r.finish()?;
        Ok(MemberAssignment {
            refused,
            members,
            generation,
            units,
        })
    }
}

fn put_varint(buf: &mut BytesMut, mut value: u64) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

fn put_str(buf: &mut BytesMut, s: &str) {
    put_varint(buf, s.len() as u64);
    buf.put_slice(s.as_bytes());
}

fn zigzag(value: i32) -> u64 {
    u64::from(((value << 1) ^ (value >> 31)) as u32)
}

fn put_flows(buf: &mut BytesMut, flows: &[FlowUnits]) {
    put_varint(buf, flows.len() as u64);
    for flow in flows {
        put_str(buf, &flow.flow);
        buf.put_u8(u8::from(flow.singleton));
        put_varint(buf, flow.topics.len() as u64);
        for topic in &flow.topics {
            put_str(buf, &topic.topic);
            let with_rates = !topic.rates.is_empty() && topic.rates.len() == topic.partitions.len();
            // Sorted so that each partition is a small delta from the one before.
            let mut order: Vec<usize> = (0..topic.partitions.len()).collect();
            order.sort_by_key(|&i| topic.partitions[i]);
            put_varint(buf, order.len() as u64);
            buf.put_u8(u8::from(with_rates));
            let mut previous = None;
            for &i in &order {
                let partition = topic.partitions[i];
                match previous {
                    None => put_varint(buf, zigzag(partition)),
                    Some(previous) => put_varint(buf, (i64::from(partition) - i64::from(previous)) as u64),
                }
                previous = Some(partition);
            }
            if with_rates {
                for &i in &order {
                    put_varint(buf, topic.rates[i]);
                }
            }
        }
    }
}

/// Reads a payload, naming what is wrong with it.
struct Reader<'a> {
    buf: &'a [u8],
    payload: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], payload: &'static str) -> Result<Self, ProtocolError> {
        let mut reader = Reader { buf, payload };
        match reader.byte("version")? {
            VERSION => Ok(reader),
            version => Err(reader.error(format!("unsupported version {version}"))),
        }
    }

    fn error(&self, message: String) -> ProtocolError {
        ProtocolError(format!("{}: {message}", self.payload))
    }

    fn byte(&mut self, what: &str) -> Result<u8, ProtocolError> {
        let (&byte, rest) = self
            .buf
            .split_first()
            .ok_or_else(|| self.error(format!("truncated in {what}")))?;
        self.buf = rest;
        Ok(byte)
    }

    fn flag(&mut self, what: &str) -> Result<bool, ProtocolError> {
        match self.byte(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(self.error(format!("{what} is {other}, not 0 or 1"))),
        }
    }

    fn varint(&mut self, what: &str) -> Result<u64, ProtocolError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte(what)?;
            let bits = u64::from(byte & 0x7f);
            // The tenth byte holds the 64th bit only.
            if shift == 63 && bits > 1 {
                break;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error(format!("{what} does not fit 64 bits")))
    }

    fn u32(&mut self, what: &str) -> Result<u32, ProtocolError> {
        let value = self.varint(what)?;
        u32::try_from(value).map_err(|_| self.error(format!("{what} {value} does not fit 32 bits")))
    }

    fn i32(&mut self, what: &str) -> Result<i32, ProtocolError> {
        let value = self.u32(what)?;
        Ok((value >> 1) as i32 ^ -((value & 1) as i32))
    }

    /// A count of things that take at least a byte each, so never more than the bytes left.
    fn count(&mut self, what: &str) -> Result<usize, ProtocolError> {
        let count = self.varint(what)?;
        match usize::try_from(count) {
            Ok(count) if count <= self.buf.len() => Ok(count),
            _ => Err(self.error(format!("{what} {count} exceeds the {} bytes left", self.buf.len()))),
        }
    }

    fn string(&mut self, what: &str) -> Result<String, ProtocolError> {
        let len = self.count(what)?;
        let (bytes, rest) = self.buf.split_at(len);
        self.buf = rest;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.error(format!("{what} is not UTF-8")))
    }

    fn flows(&mut self) -> Result<Vec<FlowUnits>, ProtocolError> {
        let count = self.count("flow count")?;
        let mut flows = Vec::with_capacity(count);
        for _ in 0..count {
            let flow = self.string("flow name")?;
            let singleton = self.flag("singleton flag")?;
            let count = self.count("topic count")?;
            let mut topics = Vec::with_capacity(count);
            for _ in 0..count {
                topics.push(self.topic()?);
            }
            flows.push(FlowUnits {
                flow,
                singleton,
                topics,
            });
        }
        Ok(flows)
    }

    fn topic(&mut self) -> Result<TopicUnits, ProtocolError> {
        let topic = self.string("topic name")?;
        let count = self.count("partition count")?;
        let with_rates = self.flag("rates flag")?;
        let mut partitions = Vec::with_capacity(count);
        let mut previous: Option<i32> = None;
        for _ in 0..count {
            let partition = match previous {
                None => self.i32("partition")?,
                Some(previous) => {
                    let delta = self.varint("partition delta")?;
                    i64::try_from(delta)
                        .ok()
                        .and_then(|delta| i32::try_from(i64::from(previous) + delta).ok())
                        .ok_or_else(|| self.error(format!("partition delta {delta} overflows in {topic}")))?
                }
            };
            partitions.push(partition);
            previous = Some(partition);
        }
        let mut rates = Vec::with_capacity(if with_rates { count } else { 0 });
        if with_rates {
            for _ in 0..count {
                rates.push(self.varint("rate")?);
            }
        }
        Ok(TopicUnits {
            topic,
            partitions,
            rates,
        })
    }

    fn finish(&self) -> Result<(), ProtocolError> {
        match self.buf.len() {
            0 => Ok(()),
            left => Err(self.error(format!("{left} bytes left over"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(name: &str, singleton: bool, topics: &[(&str, &[i32], &[u64])]) -> FlowUnits {
        FlowUnits {
            flow: name.to_owned(),
            singleton,
            topics: topics
                .iter()
                .map(|(topic, partitions, rates)| TopicUnits {
                    topic: (*topic).to_owned(),
                    partitions: partitions.to_vec(),
                    rates: rates.to_vec(),
                })
                .collect(),
        }
    }

    fn metadata() -> MemberMetadata {
        MemberMetadata {
            config: vec![("A->B.topics".to_owned(), 0xdead_beef), ("é".to_owned(), 0)],
            generation: 7,
            owned: vec![
                flow(
                    "A->B",
                    true,
                    &[("t1", &[0, 3, 9], &[0, 1_000_000, u64::MAX]), ("t2", &[], &[])],
                ),
                flow("C->D", false, &[("x", &[i32::MIN, -1, i32::MAX], &[])]),
            ],
        }
    }

    /// A tiny xorshift, so the fuzz loop needs no crate.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn round_trips() {
        let metadata = metadata();
        assert_eq!(MemberMetadata::decode(&metadata.encode()).unwrap(), metadata);
        let none = MemberMetadata {
            generation: -1,
            ..MemberMetadata::default()
        };
        assert_eq!(MemberMetadata::decode(&none.encode()).unwrap(), none);
        let assignment = MemberAssignment {
            members: 3,
            generation: 42,
            refused: None,
            units: metadata.owned.clone(),
        };
        assert_eq!(MemberAssignment::decode(&assignment.encode()).unwrap(), assignment);
        let refused = MemberAssignment {
            members: 0,
            generation: 0,
            refused: Some("configuration differs".to_owned()),
            units: vec![],
        };
        assert_eq!(MemberAssignment::decode(&refused.encode()).unwrap(), refused);
    }

    #[test]
    fn partitions_come_back_sorted_with_their_rates() {
        let metadata = MemberMetadata {
            owned: vec![flow("A->B", false, &[("t", &[5, 1, 3], &[50, 10, 30])])],
            ..MemberMetadata::default()
        };
        let decoded = MemberMetadata::decode(&metadata.encode()).unwrap();
        assert_eq!(
            decoded.owned,
            vec![flow("A->B", false, &[("t", &[1, 3, 5], &[10, 30, 50])])]
        );
    }

    #[test]
    fn empty_bytes_are_an_empty_assignment() {
        assert_eq!(MemberAssignment::decode(&[]).unwrap(), MemberAssignment::default());
        assert!(MemberMetadata::decode(&[]).is_err());
    }

    #[test]
    fn ten_thousand_partitions_with_rates_are_small() {
        let owned = vec![FlowUnits {
            flow: "source->target".to_owned(),
            singleton: true,
            topics: (0..100)
                .map(|t| TopicUnits {
                    topic: format!("some.fairly.long.topic.name-{t}"),
                    partitions: (0..100).collect(),
                    rates: (0..100).map(|p| 1_000_000 + p * 997).collect(),
                })
                .collect(),
        }];
        let metadata = MemberMetadata {
            generation: 12,
            owned,
            ..MemberMetadata::default()
        };
        let encoded = metadata.encode();
        assert!(encoded.len() < 100 * 1024, "{} bytes", encoded.len());
        assert_eq!(MemberMetadata::decode(&encoded).unwrap(), metadata);
    }

    #[test]
    fn truncation_anywhere_is_an_error() {
        let encoded = metadata().encode();
        for len in 0..encoded.len() {
            assert!(MemberMetadata::decode(&encoded[..len]).is_err(), "{len}");
        }
        let assignment = MemberAssignment {
            members: 0,
            generation: 0,
            refused: Some("no".to_owned()),
            units: metadata().owned,
        }
        .encode();
        // Empty bytes are the empty assignment; every other prefix is cut short.
        for len in 1..assignment.len() {
            assert!(MemberAssignment::decode(&assignment[..len]).is_err(), "{len}");
        }
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let huge = [0, 0xff, 0xff, 0xff, 0xff, 0x0f];
        let error = MemberMetadata::decode(&huge).unwrap_err().to_string();
        assert!(error.contains("configuration count 4294967295 exceeds"), "{error}");
        let error = MemberMetadata::decode(&[1]).unwrap_err().to_string();
        assert!(error.contains("unsupported version 1"), "{error}");
        let error = MemberAssignment::decode(&[0, 2]).unwrap_err().to_string();
        assert!(error.contains("refusal flag is 2"), "{error}");
        let mut trailing = MemberAssignment::default().encode().to_vec();
        trailing.push(0);
        let error = MemberAssignment::decode(&trailing).unwrap_err().to_string();
        assert!(error.contains("1 bytes left over"), "{error}");
        let error = MemberMetadata::decode(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
            .unwrap_err()
            .to_string();
        assert!(error.contains("generation does not fit 64 bits"), "{error}");
    }

    #[test]
    fn garbage_never_panics() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        let valid = [
            metadata().encode().to_vec(),
            MemberAssignment::default().encode().to_vec(),
        ];
        for round in 0..20_000 {
            let bytes: Vec<u8> = if round % 2 == 0 {
                let len = (xorshift(&mut state) % 64) as usize;
                (0..len).map(|_| xorshift(&mut state) as u8).collect()
            } else {
                // Mostly valid bytes with a few flipped reach deeper into the decoder.
                let mut bytes = valid[round % 4 / 2].clone();
                for _ in 0..1 + xorshift(&mut state) % 3 {
                    let at = (xorshift(&mut state) % bytes.len() as u64) as usize;
                    bytes[at] = xorshift(&mut state) as u8;
                }
                bytes
            };
            if let Ok(metadata) = MemberMetadata::decode(&bytes) {
                assert_eq!(MemberMetadata::decode(&metadata.encode()).unwrap(), metadata);
            }
            if let Ok(assignment) = MemberAssignment::decode(&bytes) {
                assert_eq!(MemberAssignment::decode(&assignment.encode()).unwrap(), assignment);
            }
        }
    }
}
