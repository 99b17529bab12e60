//! The rmcp `ClientHandler` of a connection: under 2026-07-28 servers send no requests and
//! capabilities go with each request; on a 2025-era session it declares the capabilities in
//! `initialize` and hands every request the server pushes to the driver through the runtime's
//! bounded push channel.

use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomNotification, CustomRequest, CustomResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode, ErrorData, FormElicitationCapability, Implementation,
    ProtocolVersion, UrlElicitationCapability,
};
#[allow(
    deprecated,
    reason = "sampling and roots are deprecated (SEP-2577); 2025-era servers still send them and get a refusal"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

use crate::client::session::{SessionRefusal, SessionSender};
use crate::wire::Capabilities;

/// The handler rmcp runs for a connection.
#[derive(Clone)]
pub(crate) struct PushHandler {
    pub(crate) capabilities: Capabilities,
    pub(crate) version: ProtocolVersion,
    pub(crate) pushes: SessionSender,
    pub(crate) name: String,
    pub(crate) client_version: String,
}

fn refusal(refusal: SessionRefusal) -> ErrorData {
    ErrorData::new(ErrorCode(refusal.code), refusal.message, None)
}

impl PushHandler {
    async fn forward<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<T, ErrorData> {
        let answer = self.pushes.request(method, params).await.map_err(refusal)?;
        serde_json::from_value(answer)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the answer: {e}"), None))
    }
}

impl ClientHandler for PushHandler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.capabilities.form || self.capabilities.url {
            let mut elicitation = ElicitationCapability::new();
            // 2025-06-18 knows only `elicitation: {}` (form mode).
            if self.version != ProtocolVersion::V_2025_06_18 {
                if self.capabilities.form {
                    elicitation = elicitation.with_form(FormElicitationCapability::default());
                }
                if self.capabilities.url {
                    elicitation = elicitation.with_url(UrlElicitationCapability::default());
                }
            }
            capabilities.elicitation = Some(elicitation);
        }
        ClientConfig::new(capabilities, Implementation::new(self.name.clone(), self.client_version.clone()))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let params = serde_json::to_value(&request).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        self.forward("elicitation/create", Some(params)).await
    }

    #[allow(
        deprecated,
        reason = "sampling is deprecated (SEP-2577) but 2025-era servers still send it; it is refused unless declared"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let params = serde_json::to_value(&params).ok();
        self.forward("sampling/createMessage", params).await
    }

    #[allow(
        deprecated,
        reason = "roots are deprecated (SEP-2577) but 2025-era servers still ask; refused unless declared"
    )]
    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        self.forward("roots/list", None).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        let answer = self.pushes.request(&request.method, request.params).await.map_err(refusal)?;
        Ok(CustomResult(answer))
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.pushes.notify(&notification.method, notification.params);
    }
}
