//! Zigzag varints of the record format (not the unsigned varints of flexible protocol messages).

/// Appends `value` as a zigzag varlong (also used for varints: the encoding is the same).
pub fn put_varlong(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a zigzag varlong of at most 10 bytes, advancing `input`.
pub fn get_varlong(input: &mut &[u8]) -> Option<i64> {
    let mut value = 0u64;
    for i in 0..10 {
        let (&byte, rest) = input.split_first()?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    None
}

/// Reads a zigzag varint (at most 5 bytes, fits i32), advancing `input`.
pub fn get_varint(input: &mut &[u8]) -> Option<i32> {
    let before = *input;
    let value = get_varlong(input)?;
    if before.len() - input.len() > 5 {
        return None;
    }
    i32::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        for (value, bytes) in [
            (0i64, &[0x00u8][..]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (63, &[0x7e]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (300, &[0xd8, 0x04]),
        ] {
            let mut out = Vec::new();
            put_varlong(&mut out, value);
            assert_eq!(out, bytes, "encoding {value}");
            let mut input = bytes;
            assert_eq!(get_varint(&mut input), Some(value as i32));
            assert!(input.is_empty());
        }
    }

    #[test]
    fn extremes_round_trip_and_overlong_input_fails() {
        for value in [i64::MIN, i64::MAX, i64::from(i32::MIN), i64::from(i32::MAX)] {
            let mut out = Vec::new();
            put_varlong(&mut out, value);
            assert_eq!(get_varlong(&mut &out[..]), Some(value));
        }
        assert_eq!(get_varint(&mut &[0xff, 0xff, 0xff, 0xff, 0x0f][..]), Some(i32::MIN));
        assert_eq!(get_varint(&mut &[0xfe, 0xff, 0xff, 0xff, 0x0f][..]), Some(i32::MAX));
        let mut big = Vec::new();
        put_varlong(&mut big, i64::from(i32::MAX) + 1);
        assert_eq!(get_varint(&mut &big[..]), None);
        assert_eq!(get_varlong(&mut &[0xff; 11][..]), None);
        assert_eq!(get_varlong(&mut &[0x80][..]), None);
    }
}
