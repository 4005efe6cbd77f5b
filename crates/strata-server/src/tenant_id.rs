//! What a tenant may be called, shared by the configuration's checks and
//! the `X-Scope-OrgID` header's.

/// Longest tenant name, as in Mimir.
const MAX_TENANT_LENGTH: usize = 150;

/// Checks a tenant name as Mimir does: 1 to 150 characters out of letters,
/// digits and `!-_.*'()`, and neither `.` nor `..`.
pub(crate) fn check_tenant_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("the tenant name is empty".into());
    }
    if id.len() > MAX_TENANT_LENGTH {
        return Err(format!(
            "the tenant name is {} bytes long, more than {MAX_TENANT_LENGTH}",
            id.len()
        ));
    }
    if id == "." || id == ".." {
        return Err(format!("{id:?} is not a valid tenant name"));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "!-_.*'()".contains(*c)))
    {
        return Err(format!(
            "tenant name {id:?} contains {c:?}; use letters, digits and !-_.*'()"
        ));
    }
    Ok(())
}
