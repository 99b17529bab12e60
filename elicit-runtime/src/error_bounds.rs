//! Every public error type is an honest `std::error::Error`: `Display`, `Debug`, and `Send + Sync +
//! 'static`, so it fits in a `Box<dyn Error + Send + Sync>`, in `anyhow`, and across tasks. A type
//! that loses one of these fails to compile here.

fn is_error<E: std::error::Error + Send + Sync + 'static>() {}

#[test]
fn every_public_error_is_a_sendable_std_error() {
    is_error::<crate::content::FieldError>();
    is_error::<crate::content::ContentErrors>();
    is_error::<crate::content::LengthError>();
    is_error::<crate::content::FormatError>();
    is_error::<crate::content::IntegerError>();
    is_error::<crate::field::InvalidValue>();
    is_error::<crate::schema::SchemaError>();
    is_error::<crate::wire::WireError>();
    is_error::<crate::wire::ResultError>();
    is_error::<crate::wire::tasks::TaskWireError>();
    #[cfg(feature = "server")]
    {
        is_error::<crate::state::StateError>();
        is_error::<crate::state::KeyRingError>();
        is_error::<crate::server::store::StoreError>();
        is_error::<crate::server::EngineError>();
        is_error::<crate::server::PageLoginError>();
        is_error::<crate::server::session::PeerError>();
        is_error::<crate::testing::ReplayFailure>();
        // `FlowError` converts into a boxed error instead of implementing the trait (see its docs).
        let _: fn(crate::server::FlowError) -> Box<dyn std::error::Error + Send + Sync + 'static> = Box::from;
    }
    #[cfg(feature = "client")]
    {
        is_error::<crate::client::CallError>();
        is_error::<crate::client::DriveError>();
        is_error::<crate::client::ProtocolError>();
        is_error::<crate::client::TaskError>();
        is_error::<crate::client::UrlError>();
        is_error::<crate::client::form::ValueError>();
        is_error::<crate::client::session::SessionRefusal>();
    }
    #[cfg(feature = "apps")]
    is_error::<crate::apps::AppFormError>();
    #[cfg(feature = "rmcp")]
    {
        is_error::<crate::rmcp::TemplateError>();
        is_error::<crate::rmcp::BuildError>();
    }
    #[cfg(feature = "rmcp-client")]
    {
        is_error::<crate::rmcp::client::HeaderError>();
        is_error::<crate::rmcp::client::ConnectError>();
        is_error::<crate::rmcp::client::RequestError>();
    }
    #[cfg(feature = "rmcp-auth")]
    is_error::<crate::rmcp::client::auth::AuthorizeError>();
}
