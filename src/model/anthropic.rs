//! The `anthropic` wire format (SPEC §1.3). Placeholder: being written.

use serde_json::Value;

use super::Message;
use crate::error::InputError;

pub fn read_messages(_system: Option<&Value>, _raw: &[Value]) -> Result<Vec<Message>, InputError> {
    Err(InputError::new("the anthropic format is not read yet"))
}

pub fn write_messages(_msgs: &[Message]) -> (Option<Value>, Vec<Value>) {
    (None, Vec::new())
}
