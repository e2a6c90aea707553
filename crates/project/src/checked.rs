//! Lists whose entries are checked as the file is read, so a bad entry is an error at its
//! `kiln.toml:LINE:COL` rather than later, under a flag's name.

use serde::{Deserialize, Deserializer};

/// Capabilities (`fs.read`, `net:api.example.com`), each as `--caps` takes it.
pub(crate) fn capabilities<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    let list = Option::<Vec<String>>::deserialize(d)?;
    for entry in list.iter().flatten() {
        for cap in entry.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            kiln_core::capability::Capability::parse(cap).map_err(serde::de::Error::custom)?;
        }
    }
    Ok(list)
}

/// `NAME:ADDR` entries, as `--resolve` takes them.
pub(crate) fn resolve<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let list = Option::<Vec<String>>::deserialize(d)?;
    for entry in list.iter().flatten() {
        kiln_egress::resolver::parse_entry(entry).map_err(serde::de::Error::custom)?;
    }
    Ok(list)
}
