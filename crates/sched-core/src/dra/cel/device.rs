//! The `device` variable a selector sees, built from a [`crate::model::Device`] as kube's
//! `CompilationResult.DeviceMatches` builds it (v1.34): `driver` (a string),
//! `allowMultipleAllocations` (a bool, false when unset), `attributes` and `capacity` (maps of
//! domain to maps of id to value).
//!
//! A qualified name `domain/id` goes under its domain; an unqualified one under the driver's
//! name. Looking up a domain the device has nothing under gives an empty map, as kube's
//! `mapper` does; looking up a missing id in it is the runtime error `no such key: <id>`.

use std::any::Any;
use std::collections::HashMap;

use cel::ExecutionError;
use cel::common::traits::{Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{CelBool, CelInt, CelMap, CelMapKey, CelString, MAP_TYPE, Type};
use cel::common::value::{CowVal, Val};

use super::CelError;
use super::quantity::CelQuantity;
use super::semver::CelSemver;
use crate::model::{Device, DeviceAttribute};

static MAP: Type = MAP_TYPE;

/// A map of domain to inner map whose lookups of a missing domain give an empty map.
#[derive(Clone, Debug)]
pub(super) struct DomainMap<'v> {
    inner: CelMap<'v>,
}

impl<'v> Val for DomainMap<'v> {
    fn get_type(&self) -> &Type {
        &MAP
    }

    fn cel_type() -> &'static Type
    where
        Self: Sized,
    {
        &MAP
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(&self.inner)
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(&self.inner)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(&self.inner)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(&self.inner)
    }

    fn equals(&self, other: &dyn Val) -> bool {
        self.inner.equals(other)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

impl<'v> Indexer for DomainMap<'v> {
    fn get<'b, 'w>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        match self.inner.get(idx) {
            Err(ExecutionError::NoSuchKey(_)) => Ok(CowVal::owned(CelMap::from(HashMap::new()))),
            other => other,
        }
    }

    fn steal<'w>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// `domain/id` split at the first slash, or `(driver, name)`.
fn split<'v>(name: &'v str, driver: &'v str) -> (&'v str, &'v str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

type Inner<'v> = HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>;

fn insert<'v>(
    outer: &mut HashMap<&'v str, Inner<'v>>,
    domain: &'v str,
    id: &'v str,
    v: Box<dyn Val + 'v>,
) {
    outer
        .entry(domain)
        .or_default()
        .insert(CelMapKey::from(id), v);
}

fn finish<'v>(outer: HashMap<&'v str, Inner<'v>>) -> DomainMap<'v> {
    let map: Inner<'v> = outer
        .into_iter()
        .map(|(d, m)| {
            (
                CelMapKey::from(d),
                Box::new(CelMap::from(m)) as Box<dyn Val + 'v>,
            )
        })
        .collect();
    DomainMap {
        inner: CelMap::from(map),
    }
}

/// The CEL value of one attribute, or kube's error for it.
fn attribute_value<'v>(
    name: &str,
    attr: &'v DeviceAttribute,
) -> Result<Box<dyn Val + 'v>, CelError> {
    if let Some(v) = attr.int_value {
        Ok(Box::new(CelInt::from(v)))
    } else if let Some(v) = attr.bool_value {
        Ok(Box::new(CelBool::from(v)))
    } else if let Some(v) = &attr.string_value {
        Ok(Box::new(CelString::from(v.as_str())))
    } else if let Some(v) = &attr.version_value {
        CelSemver::parse(v)
            .map(|s| Box::new(s) as Box<dyn Val + 'v>)
            .map_err(|e| CelError::InvalidAttribute {
                name: name.to_owned(),
                reason: format!("parse semantic version: {e}"),
            })
    } else {
        Err(CelError::InvalidAttribute {
            name: name.to_owned(),
            reason: "unsupported attribute value".to_owned(),
        })
    }
}

/// The `device` variable for `device` of `driver`.
pub(super) fn device_value<'v>(
    driver: &'v str,
    device: &'v Device,
) -> Result<CelMap<'v>, CelError> {
    let mut attributes: HashMap<&'v str, Inner<'v>> = HashMap::new();
    for (name, attr) in &device.attributes {
        let (domain, id) = split(name, driver);
        insert(&mut attributes, domain, id, attribute_value(name, attr)?);
    }
    let mut capacity: HashMap<&'v str, Inner<'v>> = HashMap::new();
    for (name, cap) in &device.capacity {
        let (domain, id) = split(name, driver);
        let q = CelQuantity::parse(cap.value.as_str()).map_err(|e| CelError::InvalidCapacity {
            name: name.to_owned(),
            reason: e.to_owned(),
        })?;
        insert(&mut capacity, domain, id, Box::new(q));
    }
    let mut fields: Inner<'v> = HashMap::with_capacity(4);
    fields.insert(CelMapKey::from("driver"), Box::new(CelString::from(driver)));
    fields.insert(
        CelMapKey::from("allowMultipleAllocations"),
        Box::new(CelBool::from(
            device.allow_multiple_allocations.unwrap_or(false),
        )),
    );
    fields.insert(CelMapKey::from("attributes"), Box::new(finish(attributes)));
    fields.insert(CelMapKey::from("capacity"), Box::new(finish(capacity)));
    Ok(CelMap::from(fields))
}
