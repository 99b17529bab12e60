//! The draft app-rendered forms on an [`McpServer`]: every App its engine offers is served as a
//! resource, and the UI extension's `elicitation` setting is advertised.

use ::rmcp::model::{ReadResourceResult, Resource, ResourceContents, ServerCapabilities};

use super::{McpServer, McpServerBuilder};
use crate::apps::{self, AppForm};
use crate::server::FlowError;

impl McpServerBuilder {
    /// Registers each App of the engine as a resource: `resources/read` of its URI answers its
    /// HTML as [`apps::MIME_TYPE`]. A URI another resource also claims fails the build.
    pub(super) fn with_app_forms(mut self) -> Self {
        let forms: Vec<AppForm> = self.inner.elicitation.engine().app_forms().to_vec();
        for form in forms {
            let resource = Resource::new(form.uri(), form.uri()).with_mime_type(apps::MIME_TYPE);
            self = self.resource(resource, move |_flow| {
                let contents = form.contents();
                async move {
                    let contents: ResourceContents = serde_json::from_value(contents).map_err(FlowError::handler)?;
                    Ok(ReadResourceResult::new(vec![contents]))
                }
            });
        }
        self
    }
}

impl McpServer {
    /// Merges `{"elicitation": {}}` into the UI extension's settings when the engine offers an App.
    pub(super) fn advertise_app_forms(&self, capabilities: &mut ServerCapabilities) {
        if self.engine().app_forms().is_empty() {
            return;
        }
        let settings = capabilities.extensions.get_or_insert_with(Default::default);
        let ui = settings.entry(apps::EXTENSION_ID.to_owned()).or_default();
        ui.extend(apps::server_capability());
    }
}
