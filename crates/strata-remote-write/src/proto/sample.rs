//! Hand-written `prost::Message` for the float samples of both versions.
//!
//! Derived proto3 code skips a `double` equal to 0.0, and -0.0 == 0.0, so a
//! derived encoder turns -0.0 into +0.0. Strata promises a bit-exact round
//! trip of every f64, so these encoders skip the value only when its bits are
//! all zero. Decoding is the standard one.

use prost::bytes::{Buf, BufMut};
use prost::encoding::{double, int64, skip_field, DecodeContext, WireType};
use prost::DecodeError;

fn encode_value(value: f64, buf: &mut impl BufMut) {
    if value.to_bits() != 0 {
        double::encode(1, &value, buf);
    }
}

fn value_len(value: f64) -> usize {
    if value.to_bits() != 0 {
        double::encoded_len(1, &value)
    } else {
        0
    }
}

fn encode_i64(tag: u32, v: i64, buf: &mut impl BufMut) {
    if v != 0 {
        int64::encode(tag, &v, buf);
    }
}

fn i64_len(tag: u32, v: i64) -> usize {
    if v != 0 {
        int64::encoded_len(tag, &v)
    } else {
        0
    }
}

fn located(field: &'static str) -> impl FnOnce(DecodeError) -> DecodeError {
    move |mut e| {
        e.push("Sample", field);
        e
    }
}

impl prost::Message for super::v1::Sample {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_value(self.value, buf);
        encode_i64(2, self.timestamp, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => double::merge(wire_type, &mut self.value, buf, ctx).map_err(located("value")),
            2 => {
                int64::merge(wire_type, &mut self.timestamp, buf, ctx).map_err(located("timestamp"))
            }
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        value_len(self.value) + i64_len(2, self.timestamp)
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

impl prost::Message for super::v2::Sample {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_value(self.value, buf);
        encode_i64(2, self.timestamp, buf);
        encode_i64(3, self.start_timestamp, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => double::merge(wire_type, &mut self.value, buf, ctx).map_err(located("value")),
            2 => {
                int64::merge(wire_type, &mut self.timestamp, buf, ctx).map_err(located("timestamp"))
            }
            3 => int64::merge(wire_type, &mut self.start_timestamp, buf, ctx)
                .map_err(located("start_timestamp")),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        value_len(self.value) + i64_len(2, self.timestamp) + i64_len(3, self.start_timestamp)
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}
