//! Kafka request and response headers (after the frame's int32 size).
//!
//! Request header v0: api_key, api_version, correlation_id; v1 adds the client id (a classic
//! nullable string even in flexible versions); v2 adds a tagged-field section. Response header
//! v0 is the correlation id; v1 adds a tagged-field section. Mirrors `session._request_header`.

use super::body::{DecodeError, Field, Node, Value};

/// A decoded request header (offsets are in the frame, size prefix included).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestHeader<'a> {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    /// `None` when absent (header v0) or null.
    pub client_id: Option<Node<'a>>,
    /// Tagged fields of header v2 (all unknown to the header: kept raw under `_unknown_tags`).
    pub tagged: Vec<Field<'a>>,
    /// Where the body starts.
    pub body_start: usize,
}

/// Decodes a request header from a whole frame (`data[0..4]` is the size). `hv` is the header
/// version the api key and version call for (see `schema::request_header_version`).
pub fn request_header(data: &[u8], hv: u8) -> Result<RequestHeader<'_>, DecodeError> {
    if data.len() < 12 {
        return Err(DecodeError::Short {
            what: "request header".into(),
            offset: 0,
            need: 12,
            left: data.len() as i64,
        });
    }
    let api_key = i16::from_be_bytes([data[4], data[5]]);
    let api_version = i16::from_be_bytes([data[6], data[7]]);
    let correlation_id = i32::from_be_bytes([data[8], data[9], data[10], data[11]]);
    let (mut pos, end) = (12usize, data.len());
    let mut client_id = None;
    if hv >= 1 {
        if pos + 2 > end {
            return Err(short("client_id", pos, 2, end - pos));
        }
        let n = i16::from_be_bytes([data[pos], data[pos + 1]]);
        pos += 2;
        if n < 0 {
            client_id = Some(Node {
                value: Value::Null,
                start: pos - 2,
                end: pos,
            });
        } else {
            let n = n as usize;
            if pos + n > end {
                return Err(short("client_id", pos, n, end - pos));
            }
            let s = String::from_utf8_lossy(&data[pos..pos + n]);
            client_id = Some(Node {
                value: Value::Str(s),
                start: pos - 2,
                end: pos + n,
            });
            pos += n;
        }
    }
    let mut tagged = Vec::new();
    if hv >= 2 {
        pos = tags(data, pos, &mut tagged)?;
    }
    Ok(RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id,
        tagged,
        body_start: pos,
    })
}

/// A decoded response header.
#[derive(Clone, Debug, PartialEq)]
pub struct ResponseHeader<'a> {
    pub correlation_id: i32,
    pub tagged: Vec<Field<'a>>,
    pub body_start: usize,
}

/// Decodes a response header (version `hv`, 0 or 1) from a whole frame.
pub fn response_header(data: &[u8], hv: u8) -> Result<ResponseHeader<'_>, DecodeError> {
    if data.len() < 8 {
        return Err(DecodeError::Short {
            what: "response header".into(),
            offset: 0,
            need: 8,
            left: data.len() as i64,
        });
    }
    let correlation_id = i32::from_be_bytes([data[4], data[5], data[6], data[7]]);
    let mut tagged = Vec::new();
    let body_start = if hv >= 1 {
        tags(data, 8, &mut tagged)?
    } else {
        8
    };
    Ok(ResponseHeader {
        correlation_id,
        tagged,
        body_start,
    })
}

fn short(what: &'static str, offset: usize, need: usize, left: usize) -> DecodeError {
    DecodeError::Short {
        what: what.into(),
        offset,
        need: need as i64,
        left: left as i64,
    }
}

/// A header's tagged-field section (no known tags): returns where it ends.
fn tags<'a>(data: &'a [u8], pos: usize, out: &mut Vec<Field<'a>>) -> Result<usize, DecodeError> {
    if pos < data.len() && data[pos] == 0 {
        return Ok(pos + 1);
    }
    let d = super::body::decode_tags(data, pos)?;
    out.extend(d.0);
    Ok(d.1)
}

#[cfg(test)]
mod tests {
    use super::super::body::Name;
    use super::*;

    #[test]
    fn request_header_v2_by_hand() {
        // size, Metadata(3) v12, correlation 7, client id "rd", empty tags, then the body.
        let f = [
            0, 0, 0, 13, 0, 3, 0, 12, 0, 0, 0, 7, 0, 2, b'r', b'd', 0, 0xaa,
        ];
        let h = request_header(&f, 2).unwrap();
        assert_eq!((h.api_key, h.api_version, h.correlation_id), (3, 12, 7));
        let c = h.client_id.unwrap();
        assert_eq!(c.value, Value::Str("rd".into()));
        assert_eq!((c.start, c.end), (12, 16));
        assert_eq!(h.body_start, 17);
        let e = request_header(&f[..15], 1).unwrap_err();
        assert_eq!(e.to_string(), "client_id at byte 14 needs 2 bytes, 1 left");
    }

    #[test]
    fn response_header_v1_with_an_unknown_tag() {
        let f = [0, 0, 0, 9, 0, 0, 0, 9, 1, 3, 1, 0x55, 0xee];
        let h = response_header(&f, 1).unwrap();
        assert_eq!(h.correlation_id, 9);
        assert_eq!(h.body_start, 12);
        assert_eq!(h.tagged[0].name, Name::Field("_unknown_tags"));
    }
}
