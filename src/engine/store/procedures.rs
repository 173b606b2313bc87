//! Procedures: named SQL stored in an internal table, run atomically with their arguments bound
//! by name; [`Procedures`], handed out by [`Database::procedures`].

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension};

use super::{delete_where, require_name, write_internal};
use crate::data::now_utc;
use crate::data::{Params, ProcedureDefinition, SqlResult, Value};
use crate::engine::database::Database;
use crate::engine::script::{self, ScriptMode};
use crate::engine::sqlite_error::sql_error;
use crate::error::{Error, Result};
use crate::sql::internal_table;

/// The procedures of one [`Database`]: definitions (a body of SQL and its declared parameters)
/// kept in shardlite's internal table of procedures, each run in one transaction of
/// its own. Handed out by [`Database::procedures`].
#[derive(Debug, Clone, Copy)]
pub struct Procedures<'db> {
    db: &'db Database,
}

impl<'db> Procedures<'db> {
    pub(in crate::engine) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// Procedures, sorted by name.
    pub async fn list_procedures(self) -> Result<Vec<ProcedureDefinition>> {
        self.db
            .read(|conn| {
                let mut stmt = conn
                    .prepare_cached(concat!(
                        "SELECT definition FROM ",
                        internal_table!(procedures),
                        " ORDER BY name"
                    ))
                    .map_err(sql_error)?;
                let texts = stmt
                    .query_map([], |r| r.get::<_, String>(0))
                    .map_err(sql_error)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(sql_error)?;
                texts.iter().map(|t| parse_procedure(t)).collect()
            })
            .await
    }

    /// A procedure by name.
    pub async fn get_procedure(self, name: &str) -> Result<Option<ProcedureDefinition>> {
        require_name("procedure name", name)?;
        let name = name.to_owned();
        self.db.read(move |conn| load_procedure(conn, &name)).await
    }

    /// Creates or replaces a procedure. Its body must prepare (checked inside a rolled-back savepoint).
    pub async fn put_procedure(self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        require_name("procedure name", &definition.name)?;
        require_name("bodySql", &definition.body_sql)?;
        let mut seen = std::collections::BTreeSet::new();
        for p in &definition.parameters {
            require_name("procedure parameter name", &p.name)?;
            if !seen.insert(p.name.as_str()) {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!("procedure parameter '{}' is declared twice", p.name),
                ));
            }
        }
        // A body that could never run (it ends the procedure's transaction, or reaches another
        // file) is refused when it is stored, not each time it is called.
        crate::sql::check_script(&definition.body_sql)?;
        let mut definition = definition;
        definition.name = definition.name.trim().to_owned();
        write_internal(self.db, move |conn| {
            let text = serde_json::to_string(&definition).map_err(|source| Error::Json {
                what: "a procedure definition",
                source,
            })?;
            let now = now_utc();
            conn.prepare_cached(concat!(
                "INSERT INTO ",
                internal_table!(procedures),
                " (name, definition, created_utc, updated_utc) VALUES (?1, ?2, ?3, ?3) \
                 ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, updated_utc = excluded.updated_utc"
            ))
            .map_err(sql_error)?
            .execute([&definition.name, &text, &now])
            .map_err(sql_error)?;
            Ok(definition)
        })
        .await
    }

    /// Deletes a procedure; returns whether it existed.
    pub async fn delete_procedure(self, name: &str) -> Result<bool> {
        require_name("procedure name", name)?;
        delete_where(
            self.db,
            concat!("DELETE FROM ", internal_table!(procedures), " WHERE name = ?1"),
            vec![name.to_owned()],
        )
        .await
    }

    /// Runs a procedure's body in one transaction with the arguments bound by name.
    /// Either every statement takes effect or none does.
    pub async fn execute_procedure(self, name: &str, args: Params) -> Result<SqlResult> {
        require_name("procedure name", name)?;
        let name = name.to_owned();
        self.db
            .write_atomic(move |conn| {
                let Some(definition) = load_procedure(conn, &name)? else {
                    return Err(Error::NotFound {
                        what: "procedure",
                        name: name.into(),
                    });
                };
                let bound = bind_procedure_args(&definition, args)?;
                script::execute(conn, &definition.body_sql, &bound, ScriptMode::ReadWrite)
            })
            .await
    }
}

fn parse_procedure(text: &str) -> Result<ProcedureDefinition> {
    serde_json::from_str(text).map_err(|source| Error::Json {
        what: "a stored procedure definition",
        source,
    })
}

fn load_procedure(conn: &Connection, name: &str) -> Result<Option<ProcedureDefinition>> {
    let text: Option<String> = conn
        .prepare_cached(concat!(
            "SELECT definition FROM ",
            internal_table!(procedures),
            " WHERE name = ?1"
        ))
        .map_err(sql_error)?
        .query_row([name], |r| r.get(0))
        .optional()
        .map_err(sql_error)?;
    text.as_deref().map(parse_procedure).transpose()
}

/// Matches call arguments (named, or positional in declaration order) to declared parameters.
fn bind_procedure_args(definition: &ProcedureDefinition, args: Params) -> Result<Params> {
    let mut given: BTreeMap<String, Value> = match args {
        Params::Named(map) => map,
        Params::Positional(values) => {
            if values.len() > definition.parameters.len() {
                return Err(Error::invalid_argument(
                    "args",
                    format!(
                        "procedure '{}' takes {} argument(s) but {} were given",
                        definition.name,
                        definition.parameters.len(),
                        values.len()
                    ),
                ));
            }
            definition
                .parameters
                .iter()
                .map(|p| p.name.clone())
                .zip(values)
                .collect()
        }
    };
    let mut bound = BTreeMap::new();
    for p in &definition.parameters {
        match given.remove(&p.name) {
            Some(value) => {
                bound.insert(p.name.clone(), value);
            }
            None if p.required => {
                return Err(Error::invalid_argument(
                    "args",
                    format!("procedure '{}' requires argument '{}'", definition.name, p.name),
                ));
            }
            None => {
                bound.insert(p.name.clone(), p.default.clone());
            }
        }
    }
    if let Some(unknown) = given.keys().next() {
        return Err(Error::invalid_argument(
            "args",
            format!("procedure '{}' has no parameter '{unknown}'", definition.name),
        ));
    }
    Ok(Params::Named(bound))
}
