//! The results of the data interface: SQL results, transactions, database info, table schemas,
//! row and document pages, saved queries and procedures.

use super::document_from_json;
use super::pb;
use crate::data::{
    ColumnInfo, DatabaseInfo, Document, DocumentPage, ProcedureDefinition, ProcedureParameter, RowPage, SavedQuery,
    SqlResult, TableSchema, TransactionInfo, Value,
};
use crate::error::{Error, Result};

convert_both_ways!(
    SqlResult,
    pb::SqlResult {
        is_query,
        column_names,
        rows: value_rows,
        rows_affected,
        elapsed_ms,
        last_insert_rowid,
    }
);

convert_both_ways!(
    TransactionInfo,
    pb::TransactionInfo {
        transaction_id,
        expires_at_utc,
    }
);

convert_both_ways!(
    DatabaseInfo,
    pb::DatabaseInfo {
        data_source,
        table_count,
        index_count,
        view_count,
        trigger_count,
        collection_count,
        saved_query_count,
        procedure_count,
    }
);

convert_both_ways!(
    ColumnInfo,
    pb::ColumnInfo {
        name,
        declared_type,
        not_null,
        primary_key_position,
        default_value,
    }
);

convert_both_ways!(
    TableSchema,
    pb::TableSchema {
        name,
        columns: list,
        primary_key,
        sql,
    }
);

convert_both_ways!(
    RowPage,
    pb::RowPage {
        column_names,
        rows: value_rows,
        total_rows,
        page,
        page_size,
        total_pages,
    }
);

convert_both_ways!(
    SavedQuery,
    pb::SavedQuery {
        name,
        sql_text,
        created_utc,
        updated_utc,
    }
);

impl From<DocumentPage> for pb::DocumentPage {
    fn from(page: DocumentPage) -> Self {
        Self {
            collection_name: page.collection_name,
            documents: page
                .documents
                .into_iter()
                .map(|d| pb::Document {
                    key: d.key,
                    json: d.document.to_string(),
                })
                .collect(),
            total_count: page.total_count,
            page: page.page,
            page_size: page.page_size,
            total_pages: page.total_pages,
        }
    }
}

impl TryFrom<pb::DocumentPage> for DocumentPage {
    type Error = Error;
    fn try_from(page: pb::DocumentPage) -> Result<Self> {
        let documents = page
            .documents
            .into_iter()
            .map(|d| {
                Ok(Document {
                    document: document_from_json(&d.json)?,
                    key: d.key,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            collection_name: page.collection_name,
            documents,
            total_count: page.total_count,
            page: page.page,
            page_size: page.page_size,
            total_pages: page.total_pages,
        })
    }
}

impl From<ProcedureDefinition> for pb::ProcedureDefinition {
    fn from(definition: ProcedureDefinition) -> Self {
        Self {
            name: definition.name,
            body_sql: definition.body_sql,
            parameters: definition
                .parameters
                .into_iter()
                .map(|p| pb::ProcedureParameter {
                    name: p.name,
                    required: Some(p.required),
                    default: Some(p.default.into()),
                })
                .collect(),
            description: definition.description,
        }
    }
}

impl From<pb::ProcedureDefinition> for ProcedureDefinition {
    fn from(definition: pb::ProcedureDefinition) -> Self {
        Self {
            name: definition.name,
            body_sql: definition.body_sql,
            parameters: definition
                .parameters
                .into_iter()
                .map(|p| ProcedureParameter {
                    name: p.name,
                    required: p.required.unwrap_or(true),
                    default: p.default.map(Value::from).unwrap_or_default(),
                })
                .collect(),
            description: definition.description,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procedure_parameters_default_to_required_when_unset() {
        let definition = pb::ProcedureDefinition {
            name: "p".into(),
            body_sql: "SELECT :x".into(),
            parameters: vec![pb::ProcedureParameter {
                name: "x".into(),
                required: None,
                default: None,
            }],
            description: None,
        };
        let back = ProcedureDefinition::from(definition);
        assert!(back.parameters[0].required);
        assert_eq!(back.parameters[0].default, Value::Null);
    }
}
