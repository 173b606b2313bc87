//! OpenAPI schemas of the types with hand-written serde formats (feature `server`).
//!
//! The data types derive their schemas, so `/openapi.json` describes the very types a remote
//! client deserialises. Fields that hold a [`Value`](super::Value) name [`ValueSchema`] as their
//! `value_type`, because utoipa reads any type named `Value` as `serde_json::Value` (any JSON).
//! The tuples of a catalog validation ([`MovedBuckets`], [`MovedPin`]) are JSON arrays whose
//! items differ by position, which the derive cannot say; their schemas are written out here.

use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ArrayBuilder, ArrayItems, KnownFormat, ObjectBuilder, OneOfBuilder, Schema,
    SchemaFormat, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::{MovedBuckets, MovedPin};

/// Schema of one SQLite value: `null`, an integer, a float, a string, `{"$blob": "<base64>"}`, or
/// `{"$real": "inf" | "-inf" | "nan"}` for floats JSON cannot carry.
#[derive(Debug)]
pub struct ValueSchema;

/// Standard base64 with canonical padding.
const BASE64_PATTERN: &str = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

impl PartialSchema for ValueSchema {
    fn schema() -> RefOr<Schema> {
        let blob = ObjectBuilder::new()
            .property(
                "$blob",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .content_encoding("base64")
                    .pattern(Some(BASE64_PATTERN))
                    .description(Some("the bytes, standard base64")),
            )
            .required("$blob")
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
            .description(Some("a blob"));
        let real = ObjectBuilder::new()
            .property(
                "$real",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["inf", "-inf", "nan"])),
            )
            .required("$real")
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
            .description(Some("a float JSON cannot carry"));
        // anyOf, not oneOf: an integer is also a JSON Schema number.
        AnyOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Number)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double))),
            )
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(blob)
            .item(real)
            .item(ObjectBuilder::new().schema_type(Type::Boolean).description(Some(
                "accepted as the integer 1 or 0 (SQLite has no boolean); answered as that integer",
            )))
            .description(Some(
                "an SQLite value: null, a 64-bit integer (exact beyond 2^53), a float, text, or a blob; a boolean \
                 sent is stored as 1 or 0",
            ))
            .into()
    }
}

impl ToSchema for ValueSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "Value".into()
    }
}

/// Schema of SQL parameters: an array for positional placeholders or an object for named ones.
#[derive(Debug)]
pub struct ParamsSchema;

impl PartialSchema for ParamsSchema {
    fn schema() -> RefOr<Schema> {
        let value = || RefOr::Ref(Ref::from_schema_name(ValueSchema::name()));
        OneOfBuilder::new()
            .item(
                ArrayBuilder::new()
                    .items(value())
                    .description(Some("values for ?, ?NNN placeholders; the first is ?1")),
            )
            .item(
                ObjectBuilder::new()
                    .additional_properties(Some(value()))
                    .description(Some("values for :name, @name, $name placeholders, keyed by name")),
            )
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .description(Some("parameters bound to placeholders (never spliced into the SQL)"))
            .into()
    }
}

impl ToSchema for ParamsSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "Parameters".into()
    }
}

/// A tuple: an array of exactly these items, in this order.
fn tuple(description: &str, items: Vec<ObjectBuilder>) -> RefOr<Schema> {
    let len = items.len();
    ArrayBuilder::new()
        .prefix_items(items)
        .items(ArrayItems::False)
        .min_items(Some(len))
        .max_items(Some(len))
        .description(Some(description))
        .into()
}

fn text(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
}

fn bucket(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
        .minimum(Some(0))
        .description(Some(description))
}

impl PartialSchema for MovedBuckets {
    fn schema() -> RefOr<Schema> {
        tuple(
            "a bucket range that changes owner: [start, end, from, to], end exclusive",
            vec![
                bucket("the first bucket"),
                bucket("one past the last bucket"),
                text("the owner in the current map"),
                text("the owner in the proposed map"),
            ],
        )
    }
}

impl ToSchema for MovedBuckets {}

impl PartialSchema for MovedPin {
    fn schema() -> RefOr<Schema> {
        tuple(
            "a pinned key that changes owner: [key, from, to]",
            vec![
                text("the route key"),
                text("where it resolves in the current map"),
                text("where it resolves in the proposed map"),
            ],
        )
    }
}

impl ToSchema for MovedPin {}
