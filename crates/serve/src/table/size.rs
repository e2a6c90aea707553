//! About how long a value is as JSON, counted by walking it: no text is escaped and no number
//! formatted, which is what made counting a finished run's events by writing them as JSON cost
//! a few percent of the server's CPU. Exact for what needs no escaping but floats (counted as
//! eight characters); an estimate is all the table's memory bound needs.

use serde::Serialize;
use serde::ser::{self, Impossible};

/// The length of `value` as compact JSON, about (see the module's comment).
pub(crate) fn json_size(value: &impl Serialize) -> usize {
    let mut tally = Tally(0);
    // A value that cannot be JSON at all (a map with non-text keys) counts what came before.
    let _ = value.serialize(&mut tally);
    tally.0
}

/// The characters counted so far.
struct Tally(usize);

/// Never raised: counting cannot fail, but serde wants an error type.
#[derive(Debug)]
struct Uncountable;

impl std::fmt::Display for Uncountable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not countable as JSON")
    }
}

impl std::error::Error for Uncountable {}

impl ser::Error for Uncountable {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Uncountable
    }
}

/// Decimal digits of `n`, and its sign.
fn int_len(n: i128) -> usize {
    let digits = n
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1);
    digits + usize::from(n < 0)
}

/// The length of a quoted text with no escapes.
fn quoted(s: &str) -> usize {
    s.len() + 2
}

macro_rules! count_int {
    ($($name:ident: $t:ty),*) => {$(
        fn $name(self, v: $t) -> Result<(), Uncountable> {
            self.0 += int_len(v as i128);
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for &'a mut Tally {
    type Ok = ();
    type Error = Uncountable;
    type SerializeSeq = Items<'a>;
    type SerializeTuple = Items<'a>;
    type SerializeTupleStruct = Items<'a>;
    type SerializeTupleVariant = Items<'a>;
    type SerializeMap = Items<'a>;
    type SerializeStruct = Items<'a>;
    type SerializeStructVariant = Items<'a>;

    count_int!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);

    fn serialize_bool(self, v: bool) -> Result<(), Uncountable> {
        self.0 += if v { 4 } else { 5 };
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Result<(), Uncountable> {
        self.0 += 8;
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> Result<(), Uncountable> {
        self.0 += 8;
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Uncountable> {
        self.0 += v.len_utf8() + 2;
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Uncountable> {
        self.0 += quoted(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Uncountable> {
        // An array of numbers of up to three digits and their commas.
        self.0 += 2 + v.len() * 4;
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Uncountable> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Uncountable> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Uncountable> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Uncountable> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Uncountable> {
        self.0 += quoted(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Uncountable> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Uncountable> {
        // `{"variant":value}`
        self.0 += quoted(variant) + 3;
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, 0))
    }
    fn serialize_tuple(self, _: usize) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, 0))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, 0))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, quoted(variant) + 3))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, 0))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, 0))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Items<'a>, Uncountable> {
        Ok(Items::open(self, quoted(variant) + 3))
    }
    fn collect_str<T: ?Sized + std::fmt::Display>(self, value: &T) -> Result<(), Uncountable> {
        use std::fmt::Write;
        let mut len = Len(0);
        let _ = write!(len, "{value}");
        self.0 += len.0 + 2;
        Ok(())
    }
}

/// Counts what `Display` writes without keeping it.
struct Len(usize);

impl std::fmt::Write for Len {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// The items of an array or an object: brackets, and a comma between two.
struct Items<'a> {
    tally: &'a mut Tally,
    first: bool,
}

impl<'a> Items<'a> {
    fn open(tally: &'a mut Tally, prefix: usize) -> Items<'a> {
        tally.0 += prefix + 2;
        Items { tally, first: true }
    }

    fn comma(&mut self) {
        if !std::mem::replace(&mut self.first, false) {
            self.tally.0 += 1;
        }
    }

    fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Uncountable> {
        self.comma();
        value.serialize(&mut *self.tally)
    }

    fn field<T: ?Sized + Serialize>(&mut self, key: &str, value: &T) -> Result<(), Uncountable> {
        self.comma();
        self.tally.0 += quoted(key) + 1;
        value.serialize(&mut *self.tally)
    }
}

macro_rules! items {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Items<'_> {
            type Ok = ();
            type Error = Uncountable;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Uncountable> {
                self.item(value)
            }
            fn end(self) -> Result<(), Uncountable> {
                Ok(())
            }
        }
    )*};
}

items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Items<'_> {
    type Ok = ();
    type Error = Uncountable;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Uncountable> {
        self.comma();
        // A key is text in JSON: a number key is quoted.
        key.serialize(MapKey(self.tally))?;
        self.tally.0 += 1;
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Uncountable> {
        value.serialize(&mut *self.tally)
    }
    fn end(self) -> Result<(), Uncountable> {
        Ok(())
    }
}

macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Items<'_> {
            type Ok = ();
            type Error = Uncountable;
            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Uncountable> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Uncountable> {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

/// A map's key: text, or a number or a flag written as text.
struct MapKey<'a>(&'a mut Tally);

macro_rules! key_int {
    ($($name:ident: $t:ty),*) => {$(
        fn $name(self, v: $t) -> Result<(), Uncountable> {
            self.0.0 += int_len(v as i128) + 2;
            Ok(())
        }
    )*};
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Uncountable;
    type SerializeSeq = Impossible<(), Uncountable>;
    type SerializeTuple = Impossible<(), Uncountable>;
    type SerializeTupleStruct = Impossible<(), Uncountable>;
    type SerializeTupleVariant = Impossible<(), Uncountable>;
    type SerializeMap = Impossible<(), Uncountable>;
    type SerializeStruct = Impossible<(), Uncountable>;
    type SerializeStructVariant = Impossible<(), Uncountable>;

    key_int!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);

    fn serialize_str(self, v: &str) -> Result<(), Uncountable> {
        self.0.0 += quoted(v);
        Ok(())
    }
    fn serialize_bool(self, v: bool) -> Result<(), Uncountable> {
        self.0.0 += if v { 6 } else { 7 };
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Uncountable> {
        self.0.0 += v.len_utf8() + 2;
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Uncountable> {
        self.0.0 += quoted(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Uncountable> {
        value.serialize(self)
    }
    fn collect_str<T: ?Sized + std::fmt::Display>(self, value: &T) -> Result<(), Uncountable> {
        self.0.collect_str(value)
    }
    fn serialize_f32(self, _: f32) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_f64(self, _: f64) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_none(self) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_unit(self) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Uncountable> {
        Err(Uncountable)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Uncountable> {
        Err(Uncountable)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Uncountable> {
        Err(Uncountable)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Uncountable> {
        Err(Uncountable)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Uncountable> {
        Err(Uncountable)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Uncountable> {
        Err(Uncountable)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Uncountable> {
        Err(Uncountable)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Uncountable> {
        Err(Uncountable)
    }
}

#[cfg(test)]
mod tests {
    use super::json_size;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn written(v: &impl serde::Serialize) -> usize {
        serde_json::to_string(v).map_or(0, |s| s.len())
    }

    #[test]
    fn text_numbers_flags_and_nesting_count_as_serde_json_writes_them() {
        let v = json!({"a": [1, -20, 300, true, false, null, "text"], "b": {"c": {}, "d": []},
            "long name": u64::MAX, "neg": i64::MIN, "zero": 0});
        assert_eq!(json_size(&v), written(&v));
    }

    #[test]
    fn structs_enums_options_and_number_keys_count_as_written() {
        #[derive(serde::Serialize)]
        enum Kind {
            Unit,
            New(u32),
            Pair(u8, String),
            Named { x: i32 },
        }
        #[derive(serde::Serialize)]
        struct Row {
            name: String,
            kinds: Vec<Kind>,
            maybe: Option<u8>,
            none: Option<u8>,
            by_number: BTreeMap<u32, bool>,
            letter: char,
        }
        let row = Row {
            name: "a row".into(),
            kinds: vec![
                Kind::Unit,
                Kind::New(7),
                Kind::Pair(3, "x".into()),
                Kind::Named { x: -4 },
            ],
            maybe: Some(200),
            none: None,
            by_number: [(1, true), (22, false)].into_iter().collect(),
            letter: 'é',
        };
        assert_eq!(json_size(&row), written(&row));
    }

    #[test]
    fn floats_and_escapes_are_estimates_close_to_what_is_written() {
        let v = json!({"x": 2.71, "t": 0.5, "quote": "say \"hi\"\n"});
        let (counted, real) = (json_size(&v), written(&v));
        assert!(counted.abs_diff(real) <= 8, "{counted} against {real}");
    }
}
