//! One struct for a tool's parameters: its `inputSchema` (the schemars bridge), the validation of
//! the model's arguments, and the form asking for what is missing.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking")]

use std::collections::BTreeSet;

use chrono::{DateTime, NaiveDate, Utc};
use elicit_runtime::{Elicit, Email};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::tool;
use rmcp::tool_router;
use serde_json::{Value, json};

/// Every field kind, as tool parameters.
#[derive(Elicit, Debug, PartialEq)]
#[elicit(rename_all = "camelCase", deserialize, json_schema, message = "Complete the order")]
struct Order {
    /// Who orders
    #[elicit(min_length = 1, max_length = 40)]
    name: String,
    /// A note
    #[elicit(format = "uri")]
    link: Option<String>,
    email: Email,
    day: NaiveDate,
    at: Option<DateTime<Utc>>,
    website: Option<url::Url>,
    #[elicit(minimum = 1, maximum = 9, default = 1)]
    quantity: u8,
    big: i64,
    #[elicit(minimum = 0.5, maximum = 99.5)]
    weight: f64,
    gift: bool,
    size: Size,
    colour: Option<Colour>,
    #[elicit(max_items = 2)]
    toppings: Vec<Topping>,
    extras: BTreeSet<Colour>,
}

#[derive(Elicit, Debug, PartialEq)]
#[elicit(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

#[derive(Elicit, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Colour {
    #[elicit(title = "Red")]
    Red,
    #[elicit(title = "Blue")]
    Blue,
}

#[derive(Elicit, Debug, PartialEq)]
#[elicit(rename_all = "lowercase")]
enum Topping {
    Cheese,
    Olives,
}

#[test]
fn json_schema_is_the_requested_schema() {
    let mut generator = schemars::SchemaGenerator::default();
    let schema = <Order as schemars::JsonSchema>::json_schema(&mut generator);
    let schema = serde_json::to_value(&schema).unwrap();
    assert_eq!(schema, Order::requested_schema().to_json());
    // schemars orders the keywords inside a property its own way; the properties themselves
    // keep declaration order.
    let names = |v: &Value| v["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&schema), names(&Order::requested_schema().to_json()), "property order differs");
    assert_eq!(names(&schema)[..3], ["name", "link", "email"]);
    assert_eq!(<Order as schemars::JsonSchema>::schema_name(), "Order");
}

#[derive(Clone)]
struct Shop;

#[tool_router]
impl Shop {
    #[tool(description = "Place an order")]
    fn order(&self, Parameters(order): Parameters<Order>) -> String {
        format!("{} x{}", order.name, order.quantity)
    }
}

#[test]
fn an_rmcp_tool_lists_it_as_its_input_schema() {
    let tools = Shop::tool_router().list_all();
    let tool = tools.iter().find(|t| t.name == "order").expect("the tool is listed");
    let mut listed = Value::Object((*tool.input_schema).clone());
    // rmcp generates a root schema, which names its dialect; everything else is ours.
    let dialect = listed.as_object_mut().and_then(|o| o.remove("$schema"));
    assert_eq!(dialect, Some(json!("https://json-schema.org/draft/2020-12/schema")));
    assert_eq!(listed, Order::requested_schema().to_json());
}

#[test]
fn deserialize_runs_the_validating_parser() {
    let valid = json!({"name": "Ada", "email": "ada@example.com", "day": "2027-01-02", "quantity": 2,
        "big": -5, "weight": 1.5, "gift": false, "size": "large", "toppings": ["olives"], "extras": ["Red"]});
    let order: Order = serde_json::from_value(valid.clone()).unwrap();
    assert_eq!(order.quantity, 2);
    assert_eq!(Order::from_content(valid.as_object().unwrap()).unwrap(), order);

    let invalid = json!({"name": "", "email": "nope", "day": "2027-02-30", "quantity": 12});
    let error = serde_json::from_value::<Order>(invalid).unwrap_err().to_string();
    for expected in [
        "`name` must be at least 1 character long",
        "`email` must be an e-mail address",
        "`day` must be a date",
        "`quantity` must be at most 9",
        "`big` is required",
    ] {
        assert!(error.contains(expected), "{expected:?} missing from {error:?}");
    }
}

#[test]
fn no_second_syn_major_in_the_build() {
    // `cargo tree -i syn@1` fails when no syn 1.x is in the graph of any target of the workspace.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args(["tree", "--workspace", "--all-features", "-e", "normal,build,dev", "-i", "syn@1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "syn 1 is in the build:\n{}", String::from_utf8_lossy(&output.stdout));
    assert!(stderr.contains("did not match any packages"), "unexpected cargo tree failure: {stderr}");
}

/// The engine's prelude glob-imported beside rmcp's own names: every name used below resolves to
/// one item (two globs naming different items would make its use an ambiguity error), rmcp's
/// `Parameters<T>` keeps its schema, and `Parameters<FormArgs<T>>` lists `T`'s `requestedSchema`.
mod prelude_beside_rmcp {
    use elicit_runtime::rmcp::prelude::*;
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::*;
    use rmcp::model::*;
    use rmcp::*;
    use serde_json::{Value, json};

    use super::Order;

    /// What to greet?
    #[derive(Elicit)]
    struct Greeting {
        /// Whom
        name: String,
    }

    #[derive(Clone)]
    struct Mixed {
        elicitation: Elicitation,
        tool_router: ToolRouter<Mixed>,
    }

    #[tool_router]
    impl Mixed {
        #[tool(description = "rmcp's own Parameters")]
        fn plain(&self, Parameters(order): Parameters<Order>) -> Json<Value> {
            Json(json!({"name": order.name}))
        }

        #[tool(description = "Arguments a form completes")]
        async fn greet(
            &self,
            call: ToolCall,
            Parameters(greeting): Parameters<FormArgs<Greeting>>,
        ) -> Result<CallToolResponse, ErrorData> {
            call.run(&self.elicitation, |flow| async move {
                Ok(match greeting.complete(&flow).await? {
                    Answer::Accepted(Greeting { name }) => CallToolResult::success(vec![ContentBlock::text(name)]),
                    Answer::Declined | Answer::Cancelled => CallToolResult::success(vec![]),
                })
            })
            .await
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Mixed {}

    #[test]
    fn both_tools_list_their_schemas() {
        let engine = Engine::builder("mixed", KeyRing::generate()).build();
        let mixed = Mixed { elicitation: Elicitation::new(engine), tool_router: Mixed::tool_router() };
        let tools = mixed.tool_router.list_all();
        let schema = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            let mut listed = Value::Object((*tool.input_schema).clone());
            listed.as_object_mut().unwrap().remove("$schema");
            listed
        };
        assert_eq!(schema("plain"), Order::requested_schema().to_json());
        assert_eq!(schema("greet"), Greeting::requested_schema().to_json());
        let _: &[ProtocolVersion] = SUPPORTED_PROTOCOL_VERSIONS;
        let _: fn(Engine) -> Elicitation = Elicitation::new;
        let _ = (std::any::type_name::<McpServer>(), std::any::type_name::<PromptCall>());
        let _ = (std::any::type_name::<FlowError>(), std::any::type_name::<UrlAnswer>(), ARGUMENTS_KEY);
    }
}
